//! Inclusive projection through partition transforms. (Being written.)
