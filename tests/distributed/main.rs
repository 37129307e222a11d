//! icefloe's plans on datafusion-distributed and Ballista (feature `distributed`): worker and
//! executor processes on 127.0.0.1 started by these tests, a coordinator (or a Ballista client
//! and scheduler) in the test, and every query's answer compared with the single-process
//! answer over the same tables.
//!
//! The workers are this test binary run again in worker mode (`ICEFLOE_TEST_WORKER`, see
//! [`worker_process`]): real processes, killed when the test's cluster is dropped, and ending
//! by themselves when the test process goes away (their stdin closes).

mod ballista;
mod changes;
mod cluster;
mod queries;
