//! PVM's group library on threadwire's named groups.
