pub mod multisplit;
