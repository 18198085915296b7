//! What the product's solvers are checked and measured against, never
//! chosen by a user: exhaustive search ([`brute`]) and the generic
//! Hungarian method on the dense matrix ([`munkres`], as AlloX and Gavel
//! solve it) as ground truth in tests and benchmarks, and the seeded
//! random instances ([`random`]) the benchmarks and `fairmatch bench
//! solver` draw.

pub mod brute;
pub mod munkres;
pub mod random;
