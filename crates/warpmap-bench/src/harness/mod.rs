//! What every experiment shares: how times are taken and summarised ([`timing`]), how results
//! are checked ([`verify`]), the report they go into ([`report`]), the in-run roofline and the
//! out-of-core bound they are compared with ([`roofline`]), the GPU session that measures those
//! first ([`session`]), and the host key sets of the runs ([`workloads`]).

pub mod report;
pub mod roofline;
pub mod session;
pub mod timing;
pub mod verify;
pub mod workloads;
