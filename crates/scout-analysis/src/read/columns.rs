//! One batch's columns decoded into plain vectors: integers of any Arrow width, enums (dictionaries
//! or plain strings) as the part's codes, nulls as sentinels.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;

use super::Part;
use crate::codes::point_code;
use crate::dicts::NULL;
use crate::Error;

/// The columns of `packet.parquet` the attribution reads.
pub(super) const COLUMNS: [&str; 19] = [
    "t_ns",
    "pkt",
    "point",
    "layer",
    "retx",
    "queue",
    "dir",
    "slice",
    "reason",
    "ue",
    "flow",
    "bytes",
    "rnti",
    "qfi",
    "drb",
    "ecn",
    "node",
    "queue_bytes",
    "queue_pkts",
];

/// One batch's columns, decoded (buffers reused from batch to batch).
#[derive(Default)]
pub(super) struct Cols {
    pub(super) t: Vec<i64>,
    pub(super) pkt: Vec<u64>,
    pub(super) pc: Vec<u8>,
    pub(super) layer: Vec<u8>,
    pub(super) retx: Vec<u8>,
    pub(super) queue: Vec<u8>,
    pub(super) exec_q: Vec<u8>,
    pub(super) node: Vec<u8>,
    /// `u64::MAX` / `u32::MAX`: null.
    pub(super) queue_bytes: Vec<u64>,
    pub(super) queue_pkts: Vec<u32>,
    pub(super) dir: Vec<u8>,
    pub(super) slice: Vec<u8>,
    pub(super) reason: Vec<u8>,
    pub(super) ue: Vec<u32>,
    pub(super) flow: Vec<u32>,
    pub(super) bytes: Vec<u32>,
    pub(super) rnti: Vec<i32>,
    pub(super) qfi: Vec<i16>,
    pub(super) drb: Vec<i16>,
    pub(super) ecn: Vec<u8>,
}

impl Cols {
    pub(super) fn decode(&mut self, path: &Path, b: &RecordBatch, part: &mut Part) -> Result<(), Error> {
        fn ctx<'a>(path: &'a Path, column: &'a str) -> Ctx<'a> {
            Ctx { path, column }
        }
        let col = |name: &str| -> &ArrayRef { b.column(b.schema().index_of(name).expect("projected")) };
        let ctx = |name: &'static str| ctx(path, name);
        macro_rules! fresh {
            ($($v:ident),*) => { $( self.$v.clear(); )* };
        }
        fresh!(t, pkt, pc, layer, retx, queue, exec_q, node, dir, slice, reason, ue, flow, bytes, rnti, qfi, drb, ecn);
        fresh!(queue_bytes, queue_pkts);
        ints(col("t_ns"), ctx("t_ns"), &mut self.t, 0, |v| v)?;
        ints(col("pkt"), ctx("pkt"), &mut self.pkt, 0, |v| v as u64)?;
        ints(col("retx"), ctx("retx"), &mut self.retx, 0, |v| v.clamp(0, 255) as u8)?;
        ints(col("ue"), ctx("ue"), &mut self.ue, 0, |v| v as u32)?;
        ints(col("flow"), ctx("flow"), &mut self.flow, 0, |v| v as u32)?;
        ints(col("bytes"), ctx("bytes"), &mut self.bytes, 0, |v| v as u32)?;
        ints(col("rnti"), ctx("rnti"), &mut self.rnti, -1, |v| v as i32)?;
        ints(col("qfi"), ctx("qfi"), &mut self.qfi, -1, |v| v as i16)?;
        ints(col("drb"), ctx("drb"), &mut self.drb, -1, |v| v as i16)?;
        ints(col("ecn"), ctx("ecn"), &mut self.ecn, 0, |v| v as u8)?;
        ints(col("queue_bytes"), ctx("queue_bytes"), &mut self.queue_bytes, u64::MAX, |v| v as u64)?;
        ints(col("queue_pkts"), ctx("queue_pkts"), &mut self.queue_pkts, u32::MAX, |v| v as u32)?;
        enums(col("point"), ctx("point"), &mut self.pc, |n| Some(point_code(n)))?;
        let r = &mut part.queues;
        enums(col("queue"), ctx("queue"), &mut self.queue, |n| r.code(n))?;
        while part.queue_exec.len() < part.queues.names.names.len() {
            part.queue_exec.push(part.queues.names.names[part.queue_exec.len()].ends_with("_exec") as u8);
        }
        // A null queue is not an executor's.
        let exec = &part.queue_exec;
        self.exec_q.extend(self.queue.iter().map(|&q| exec.get(q as usize).copied().unwrap_or(0)));
        let r = &mut part.nodes;
        enums(col("node"), ctx("node"), &mut self.node, |n| r.code(n))?;
        let r = &mut part.layers;
        enums(col("layer"), ctx("layer"), &mut self.layer, |n| r.code(n))?;
        let r = &mut part.dirs;
        enums(col("dir"), ctx("dir"), &mut self.dir, |n| r.code(n))?;
        let r = &mut part.slices;
        enums(col("slice"), ctx("slice"), &mut self.slice, |n| r.code(n))?;
        let r = &mut part.reasons;
        enums(col("reason"), ctx("reason"), &mut self.reason, |n| r.code(n))?;
        Ok(())
    }
}

#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub(super) path: &'a Path,
    pub(super) column: &'a str,
}

impl Ctx<'_> {
    pub(super) fn err(&self, problem: impl Into<String>) -> Error {
        Error::Column { path: self.path.to_path_buf(), column: self.column.to_string(), problem: problem.into() }
    }
}

/// Appends an integer column (any Arrow integer type) converted by `conv`, nulls as `null`.
pub(super) fn ints<T: Copy>(
    a: &ArrayRef,
    ctx: Ctx,
    out: &mut Vec<T>,
    null: T,
    conv: impl Fn(i64) -> T,
) -> Result<(), Error> {
    macro_rules! prim {
        ($t:ty) => {{
            let p = a.as_primitive::<$t>();
            match p.nulls().filter(|n| n.null_count() > 0) {
                None => out.extend(p.values().iter().map(|&v| conv(v as i64))),
                Some(nulls) => {
                    out.extend(
                        p.values().iter().zip(nulls.iter()).map(|(&v, ok)| if ok { conv(v as i64) } else { null }),
                    )
                }
            }
        }};
    }
    match a.data_type() {
        DataType::Int64 => prim!(Int64Type),
        DataType::UInt64 => prim!(UInt64Type),
        DataType::Int32 => prim!(Int32Type),
        DataType::UInt32 => prim!(UInt32Type),
        DataType::Int16 => prim!(Int16Type),
        DataType::UInt16 => prim!(UInt16Type),
        DataType::Int8 => prim!(Int8Type),
        DataType::UInt8 => prim!(UInt8Type),
        other => return Err(ctx.err(format!("type {other}; accepted: an integer type"))),
    }
    Ok(())
}

/// Appends an enum column (a dictionary of strings, or plain strings) as codes given by `code`
/// (once per distinct name of a batch), nulls as [`NULL`].
pub(super) fn enums(
    a: &ArrayRef,
    ctx: Ctx,
    out: &mut Vec<u8>,
    mut code: impl FnMut(&str) -> Option<u8>,
) -> Result<(), Error> {
    let too_many = || ctx.err("more than 255 distinct values");
    if let Some(d) = a.as_any_dictionary_opt() {
        let values = d.values();
        let names: Vec<Option<&str>> = match values.data_type() {
            DataType::Utf8 => values.as_string::<i32>().iter().collect(),
            DataType::LargeUtf8 => values.as_string::<i64>().iter().collect(),
            DataType::Utf8View => values.as_string_view().iter().collect(),
            other => return Err(ctx.err(format!("dictionary of {other}; accepted: strings"))),
        };
        let mut map = Vec::with_capacity(names.len());
        for n in names {
            map.push(match n {
                Some(n) => code(n).ok_or_else(too_many)?,
                None => NULL,
            });
        }
        let nulls = a.logical_nulls().filter(|n| n.null_count() > 0);
        if let Some(k) = a.as_dictionary_opt::<UInt8Type>() {
            let keys = k.keys().values();
            match nulls {
                None => out.extend(keys.iter().map(|&k| map[k as usize])),
                Some(nulls) => {
                    out.extend(keys.iter().zip(nulls.iter()).map(|(&k, ok)| if ok { map[k as usize] } else { NULL }))
                }
            }
        } else {
            let keys = d.normalized_keys();
            match nulls {
                None => out.extend(keys.iter().map(|&k| map[k])),
                Some(nulls) => out.extend(keys.iter().zip(nulls.iter()).map(|(&k, ok)| if ok { map[k] } else { NULL })),
            }
        }
        return Ok(());
    }
    let mut one = |s: Option<&str>| -> Result<u8, Error> {
        match s {
            Some(s) => code(s).ok_or_else(too_many),
            None => Ok(NULL),
        }
    };
    match a.data_type() {
        DataType::Utf8 => {
            for s in a.as_string::<i32>().iter() {
                out.push(one(s)?);
            }
        }
        DataType::LargeUtf8 => {
            for s in a.as_string::<i64>().iter() {
                out.push(one(s)?);
            }
        }
        DataType::Utf8View => {
            for s in a.as_string_view().iter() {
                out.push(one(s)?);
            }
        }
        DataType::Null => out.extend(std::iter::repeat_n(NULL, a.len())),
        other => return Err(ctx.err(format!("type {other}; accepted: strings or a dictionary of strings"))),
    }
    Ok(())
}
