//! The textual form of regions: a header per region (kind, space, the partitioned graph's nodes
//! it reads and writes) and its body in the graph's textual IR, indented.
//!
//! ```text
//! kiln.regions v1
//! region 0 reduction reduce shape=[1797,64] axes=[0] inputs=[%0] outputs=[%4,%9] {
//!   %0 = input {index=0} : f32[1797,64]
//!   ...
//!   return %4, %9
//! }
//! ```

use kiln_ir::{IrError, NodeId, Shape};

use super::{Region, RegionKind, Space};

fn ids(v: &[NodeId]) -> String {
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// Prints regions; [`parse_regions`] reads the text back.
pub fn print_regions(regions: &[Region]) -> String {
    let mut out = String::from("kiln.regions v1\n");
    for (i, r) in regions.iter().enumerate() {
        out += &format!(
            "region {i} {} {} inputs=[{}] outputs=[{}] {{\n",
            r.kind.name(),
            r.space,
            ids(&r.inputs),
            ids(&r.outputs)
        );
        let body = kiln_ir::text::print(&r.body);
        for line in body.lines().skip(1) {
            out += "  ";
            out += line;
            out += "\n";
        }
        out += "}\n";
    }
    out
}

fn err(line: usize, message: impl Into<String>) -> IrError {
    IrError::Parse { line, column: 1, message: message.into() }
}

fn list(line: usize, s: &str, key: &str) -> Result<Vec<String>, IrError> {
    let rest =
        s.strip_prefix(key).and_then(|r| r.strip_prefix("=[")).and_then(|r| r.strip_suffix(']'));
    let rest = rest.ok_or_else(|| err(line, format!("expected {key}=[...], found {s:?}")))?;
    Ok(rest.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect())
}

fn numbers(line: usize, s: &str, key: &str) -> Result<Vec<usize>, IrError> {
    list(line, s, key)?
        .iter()
        .map(|t| t.parse().map_err(|_| err(line, format!("bad number {t:?} in {key}"))))
        .collect()
}

fn node_ids(line: usize, s: &str, key: &str) -> Result<Vec<NodeId>, IrError> {
    list(line, s, key)?
        .iter()
        .map(|t| {
            t.strip_prefix('%')
                .and_then(|n| n.parse().ok())
                .map(NodeId)
                .ok_or_else(|| err(line, format!("bad node reference {t:?} in {key}")))
        })
        .collect()
}

/// Parses the text [`print_regions`] writes. Errors name the line (of the whole text).
pub fn parse_regions(text: &str) -> Result<Vec<Region>, IrError> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim()) != Some("kiln.regions v1") {
        return Err(err(1, "expected the header `kiln.regions v1`"));
    }
    let mut regions = Vec::new();
    let mut i = 1;
    while i < lines.len() {
        let ln = i + 1;
        let header = lines[i].trim();
        i += 1;
        if header.is_empty() {
            continue;
        }
        let words: Vec<&str> = header.split_whitespace().collect();
        if words.first() != Some(&"region") || words.last() != Some(&"{") || words.len() < 6 {
            return Err(err(
                ln,
                format!(
                    "expected `region N KIND SPACE inputs=[..] outputs=[..] {{`, found {header:?}"
                ),
            ));
        }
        if words[1].parse::<usize>().ok() != Some(regions.len()) {
            return Err(err(ln, format!("expected region {}", regions.len())));
        }
        let kind = match words[2] {
            "elementwise" => RegionKind::Elementwise,
            "reduction" => RegionKind::Reduction,
            "scatter" => RegionKind::Scatter,
            "scan" => RegionKind::Scan,
            "sort" => RegionKind::Sort,
            "vendor" => RegionKind::Vendor,
            "custom" => RegionKind::Custom,
            other => return Err(err(ln, format!("unknown region kind {other:?}"))),
        };
        let n = words.len();
        let (space_words, io) = (&words[3..n - 3], &words[n - 3..n - 1]);
        let space = match space_words {
            ["opaque"] => Space::Opaque,
            ["elementwise", shape] => {
                Space::Elementwise { shape: Shape::from_vec(numbers(ln, shape, "shape")?) }
            }
            ["reduce", shape, axes] => Space::Reduce {
                shape: Shape::from_vec(numbers(ln, shape, "shape")?),
                axes: numbers(ln, axes, "axes")?.into_iter().collect(),
            },
            ["scatter", items] => {
                Space::Scatter { items: Shape::from_vec(numbers(ln, items, "items")?) }
            }
            ["scan", shape, axis] => Space::Scan {
                shape: Shape::from_vec(numbers(ln, shape, "shape")?),
                axis: axis
                    .strip_prefix("axis=")
                    .and_then(|a| a.parse().ok())
                    .ok_or_else(|| err(ln, format!("bad axis {axis:?}")))?,
            },
            other => return Err(err(ln, format!("bad space {other:?}"))),
        };
        let inputs = node_ids(ln, io[0], "inputs")?;
        let outputs = node_ids(ln, io[1], "outputs")?;
        let start = i;
        while i < lines.len() && lines[i].trim() != "}" {
            i += 1;
        }
        if i == lines.len() {
            return Err(err(ln, "region body not closed by `}`"));
        }
        let mut body_text = String::from("kiln.graph v1\n");
        for l in &lines[start..i] {
            body_text += l.strip_prefix("  ").unwrap_or(l);
            body_text += "\n";
        }
        i += 1;
        let body = kiln_ir::text::parse(&body_text).map_err(|e| match e {
            IrError::Parse { line, column, message } => {
                IrError::Parse { line: line + start - 1, column: column + 2, message }
            }
            other => other,
        })?;
        regions.push(Region { kind, space, body, inputs, outputs });
    }
    Ok(regions)
}
