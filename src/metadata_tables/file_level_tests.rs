//! Tests of the file-level relations against the PyIceberg oracle files.
