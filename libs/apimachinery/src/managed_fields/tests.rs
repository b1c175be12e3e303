//! Behaviour tests of update tracking and server-side apply.
