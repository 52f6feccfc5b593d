//! Partial shapes: dimensions that are static, an interval, or unknown; ranks that may be unknown.

use std::fmt;

/// One dimension: the closed interval `min..=max`, `max = None` meaning unbounded.
///
/// A static dimension has `min == max`; the fully dynamic one (`?`, `-1`) is `0..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    min: u64,
    max: Option<u64>,
}

impl Dim {
    pub const DYNAMIC: Dim = Dim { min: 0, max: None };

    pub fn fixed(n: u64) -> Dim {
        Dim {
            min: n,
            max: Some(n),
        }
    }

    /// The interval `min..=max`; `None` when `max < min`.
    pub fn interval(min: u64, max: Option<u64>) -> Option<Dim> {
        match max {
            Some(m) if m < min => None,
            _ => Some(Dim { min, max }),
        }
    }

    pub fn min(self) -> u64 {
        self.min
    }

    pub fn max(self) -> Option<u64> {
        self.max
    }

    /// The value of a static dimension.
    pub fn get_static(self) -> Option<u64> {
        (self.max == Some(self.min)).then_some(self.min)
    }

    pub fn is_static(self) -> bool {
        self.get_static().is_some()
    }

    pub fn is_dynamic(self) -> bool {
        !self.is_static()
    }

    /// Both dims could describe the same run-time size (their intervals intersect).
    pub fn compatible(self, other: Dim) -> bool {
        self.intersect(other).is_some()
    }

    /// OpenVINO's `Dimension::merge`: the intersection, or `None` if empty.
    pub fn intersect(self, other: Dim) -> Option<Dim> {
        let min = self.min.max(other.min);
        let max = match (self.max, other.max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        };
        Dim::interval(min, max)
    }

    /// The smallest interval holding both.
    pub fn hull(self, other: Dim) -> Dim {
        Dim {
            min: self.min.min(other.min),
            max: self.max.zip(other.max).map(|(a, b)| a.max(b)),
        }
    }

    /// Whether a concrete size lies in this dimension's interval.
    pub fn contains(self, n: u64) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl fmt::Display for Dim {
    /// OpenVINO's writer form: `3`, `?`, `1..4`, `..5`, `2..`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.min, self.max) {
            (a, Some(b)) if a == b => write!(f, "{a}"),
            (0, None) => f.write_str("?"),
            (0, Some(b)) => write!(f, "..{b}"),
            (a, None) => write!(f, "{a}.."),
            (a, Some(b)) => write!(f, "{a}..{b}"),
        }
    }
}

/// A shape whose rank may be unknown (`dims == None`) and whose dims may be dynamic.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartialShape {
    dims: Option<Vec<Dim>>,
}

impl PartialShape {
    pub fn dynamic_rank() -> PartialShape {
        PartialShape { dims: None }
    }

    pub fn new(dims: Vec<Dim>) -> PartialShape {
        PartialShape { dims: Some(dims) }
    }

    pub fn fixed(dims: &[usize]) -> PartialShape {
        PartialShape::new(dims.iter().map(|&d| Dim::fixed(d as u64)).collect())
    }

    /// A static rank with every dim dynamic.
    pub fn dynamic_of_rank(rank: usize) -> PartialShape {
        PartialShape::new(vec![Dim::DYNAMIC; rank])
    }

    pub fn dims(&self) -> Option<&[Dim]> {
        self.dims.as_deref()
    }

    pub fn rank(&self) -> Option<usize> {
        self.dims.as_ref().map(Vec::len)
    }

    pub fn is_static(&self) -> bool {
        self.dims
            .as_ref()
            .is_some_and(|d| d.iter().all(|d| d.is_static()))
    }

    /// The static shape, if every dim is static.
    pub fn to_static(&self) -> Option<Vec<usize>> {
        self.dims
            .as_ref()?
            .iter()
            .map(|d| d.get_static().and_then(|v| usize::try_from(v).ok()))
            .collect()
    }

    /// OpenVINO's `PartialShape::compatible`: some concrete shape satisfies both.
    pub fn compatible(&self, other: &PartialShape) -> bool {
        self.merge(other).is_some()
    }

    /// OpenVINO's `PartialShape::merge_into`: the intersection, or `None` if incompatible.
    pub fn merge(&self, other: &PartialShape) -> Option<PartialShape> {
        match (&self.dims, &other.dims) {
            (None, _) => Some(other.clone()),
            (_, None) => Some(self.clone()),
            (Some(a), Some(b)) => {
                if a.len() != b.len() {
                    return None;
                }
                let dims = a
                    .iter()
                    .zip(b)
                    .map(|(x, y)| x.intersect(*y))
                    .collect::<Option<Vec<_>>>()?;
                Some(PartialShape::new(dims))
            }
        }
    }

    /// The smallest partial shape describing every shape either describes: per-dim hulls at
    /// equal ranks, a dynamic rank otherwise (an If's output when the branch is not known, a
    /// value carried from one loop iteration to the next).
    pub fn hull(&self, other: &PartialShape) -> PartialShape {
        match (&self.dims, &other.dims) {
            (Some(a), Some(b)) if a.len() == b.len() => {
                PartialShape::new(a.iter().zip(b).map(|(x, y)| x.hull(*y)).collect())
            }
            _ => PartialShape::dynamic_rank(),
        }
    }

    /// Whether a concrete shape is one of the shapes this partial shape describes.
    pub fn accepts(&self, shape: &[usize]) -> bool {
        match &self.dims {
            None => true,
            Some(d) => {
                d.len() == shape.len() && d.iter().zip(shape).all(|(d, &s)| d.contains(s as u64))
            }
        }
    }

    /// Parses OpenVINO's `PartialShape(std::string)` grammar, as Parameter `shape` attributes
    /// use it: `2,3`, `2, 3`, `[2,3]`, `?,3`, `-1,3`, `1..4,3`, `..5`, `2..`, `...` (dynamic
    /// rank), `` (scalar).
    pub fn parse(text: &str) -> Result<PartialShape, String> {
        let mut s = text.trim();
        if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            s = inner.trim();
        } else if let Some(inner) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            s = inner.trim();
        }
        if s == "..." {
            return Ok(PartialShape::dynamic_rank());
        }
        if s.is_empty() {
            return Ok(PartialShape::new(Vec::new()));
        }
        s.split(',')
            .map(|item| {
                parse_dim(item.trim()).ok_or_else(|| {
                    format!("invalid dimension `{}` in shape \"{text}\"", item.trim())
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(PartialShape::new)
    }
}

fn parse_bound(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_dim(s: &str) -> Option<Dim> {
    match s {
        "?" | "-1" => return Some(Dim::DYNAMIC),
        _ => {}
    }
    if let Some((lo, hi)) = s.split_once("..") {
        let min = if lo.trim().is_empty() {
            0
        } else {
            parse_bound(lo.trim())?
        };
        let max = if hi.trim().is_empty() {
            None
        } else {
            Some(parse_bound(hi.trim())?)
        };
        if lo.trim().is_empty() && hi.trim().is_empty() {
            return None;
        }
        return Dim::interval(min, max);
    }
    parse_bound(s).map(Dim::fixed)
}

impl fmt::Display for PartialShape {
    /// `[2,?,1..4]`, `[]` for a scalar, `[...]` for a dynamic rank.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.dims {
            None => f.write_str("[...]"),
            Some(d) => {
                f.write_str("[")?;
                for (i, dim) in d.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{dim}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Number of elements of a static shape, `None` on overflow.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Formats a static shape as `[2,3]`.
pub fn fmt_shape(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        PartialShape::parse(s).unwrap().to_string()
    }

    #[test]
    fn hulls_keep_equal_dims_and_widen_the_others() {
        let s = |t: &str| PartialShape::parse(t).unwrap();
        assert_eq!(s("2,3").hull(&s("2,5")).to_string(), "[2,3..5]");
        assert_eq!(s("2,?").hull(&s("2,5")).to_string(), "[2,?]");
        assert_eq!(s("1..4").hull(&s("6")).to_string(), "[1..6]");
        assert_eq!(s("2,3").hull(&s("2")).to_string(), "[...]");
        assert_eq!(s("...").hull(&s("2")).to_string(), "[...]");
    }

    #[test]
    fn parses_every_openvino_form() {
        assert_eq!(p("2,3"), "[2,3]");
        assert_eq!(p("2, 3"), "[2,3]");
        assert_eq!(p("[2,3]"), "[2,3]");
        assert_eq!(p("?,3"), "[?,3]");
        assert_eq!(p("-1,3"), "[?,3]");
        assert_eq!(p("1..4,3"), "[1..4,3]");
        assert_eq!(p("..5"), "[..5]");
        assert_eq!(p("2.."), "[2..]");
        assert_eq!(p("..."), "[...]");
        assert_eq!(p(""), "[]");
        assert_eq!(p("1..10,?,4,2..,..5"), "[1..10,?,4,2..,..5]");
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["a", "2,,3", "-2", "5..3", "..", "1.5", "2;3", "1..2..3"] {
            assert!(PartialShape::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn merge_and_compatibility() {
        let a = PartialShape::parse("1..4,?").unwrap();
        let b = PartialShape::parse("3,5..").unwrap();
        assert_eq!(a.merge(&b).unwrap().to_string(), "[3,5..]");
        assert!(!a.compatible(&PartialShape::parse("5,1").unwrap()));
        assert!(a.compatible(&PartialShape::dynamic_rank()));
        assert!(!a.compatible(&PartialShape::parse("1").unwrap()));
        assert!(a.accepts(&[2, 100]) && !a.accepts(&[5, 1]));
    }
}
