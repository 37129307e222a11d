//! (Being written: see the module list in mod.rs.)
