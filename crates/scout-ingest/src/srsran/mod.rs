//! srsRAN Project gNB logs (srslog text format; `../shared/reference/srsran-logging.md` §1).

pub mod health;
pub mod identity;
pub mod line;
pub mod message;
pub mod metrics;
pub mod prefetch;
pub mod reader;
pub mod run;
pub mod slots;
pub mod stitch;
pub mod trace;
pub mod ues;
pub mod version;

pub use line::{parse_header, Header};
pub use message::{parse_message, Message, Prefix};
pub use reader::{open_log, Entry, EntryReader, ReadStats};
