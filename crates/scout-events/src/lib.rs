//! Scout's event schema, version 1, and the writer every producer uses.
//!
//! The three tables of a run (`packet_events`, `slot_events`, `control_events`) are defined once, in
//! [`schema`], as plain Rust structs that the sans-IO model fills in. The [`writer`] (feature
//! `parquet`, on by default) turns them into Parquet files inside a run directory: zstd-compressed,
//! dictionary-encoded enums, streamed in bounded row groups, and committed atomically — a run that
//! crashes is left with `run.json` saying `"complete": false` and no half-written table under its
//! final name. `docs/schema.md` documents every column; `tests` check the two agree.

#[cfg(feature = "parquet")]
mod chunk;
#[cfg(feature = "parquet")]
pub mod header;
pub mod quantile;
#[cfg(feature = "parquet")]
pub mod read;
pub mod schema;
#[cfg(feature = "parquet")]
pub mod table;
pub mod tap;
#[cfg(feature = "parquet")]
pub mod writer;

pub use schema::*;

/// Where a file is written before it is complete: `PATH.partial`, renamed to `PATH` when done, so
/// that no half-written file is ever seen under its final name (a reader skips `.partial` files).
pub fn partial_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    partial.into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_partial_file_is_its_final_name_and_partial() {
        let p = super::partial_path(std::path::Path::new("/run/events/packet.parquet"));
        assert_eq!(p, std::path::Path::new("/run/events/packet.parquet.partial"));
    }
}
