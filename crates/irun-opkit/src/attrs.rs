//! Strict reading of a layer's `<data>` attributes: an invalid value is an error naming the
//! attribute; an attribute nobody read is reported as unknown (a warning).

use std::cell::RefCell;

use irun_ir::{Attr, Layer};
use irun_tensor::ElementType;

use crate::op::OpError;

pub struct AttrReader<'a> {
    pub layer: &'a Layer,
    read: RefCell<Vec<&'a str>>,
}

impl<'a> AttrReader<'a> {
    pub fn new(layer: &'a Layer) -> AttrReader<'a> {
        AttrReader {
            layer,
            read: RefCell::new(Vec::new()),
        }
    }

    /// The raw attribute, marked as read.
    pub fn get(&self, name: &'a str) -> Option<&'a Attr> {
        self.read.borrow_mut().push(name);
        self.layer.data_attr(name)
    }

    pub fn required(&self, name: &'a str) -> Result<&'a Attr, OpError> {
        self.get(name).ok_or_else(|| {
            OpError::attribute(
                name,
                format!("{} requires the attribute `{name}`", self.layer.type_name),
            )
        })
    }

    /// An enum attribute, matched case-insensitively as OpenVINO does; returned lower-case.
    pub fn enum_or(
        &self,
        name: &'a str,
        allowed: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, OpError> {
        let Some(a) = self.get(name) else {
            return Ok(default);
        };
        let v = a.value.trim().to_ascii_lowercase();
        allowed.iter().find(|x| **x == v).copied().ok_or_else(|| {
            OpError::attribute(
                name,
                format!(
                    "`{name}=\"{}\"` is not one of {}",
                    a.value,
                    allowed.join(", ")
                ),
            )
        })
    }

    /// A boolean: `true`/`false`/`1`/`0` in any case. OpenVINO silently keeps the default for
    /// anything else (`"yes"`); irun reports it.
    pub fn bool_or(&self, name: &'a str, default: bool) -> Result<bool, OpError> {
        let Some(a) = self.get(name) else {
            return Ok(default);
        };
        match a.value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(OpError::attribute(
                name,
                format!(
                    "`{name}=\"{}\"` is not a boolean (true, false, 1 or 0)",
                    a.value
                ),
            )),
        }
    }

    /// An integer attribute; `default` when omitted (`None`: the attribute is required).
    pub fn i64_or(&self, name: &'a str, default: Option<i64>) -> Result<i64, OpError> {
        let Some(a) = self.get(name) else {
            return default.ok_or_else(|| {
                OpError::attribute(
                    name,
                    format!("{} requires the attribute `{name}`", self.layer.type_name),
                )
            });
        };
        a.value.trim().parse::<i64>().map_err(|_| {
            OpError::attribute(name, format!("`{name}=\"{}\"` is not an integer", a.value))
        })
    }

    /// A comma-separated list of integers (`begin_mask="1,0"`); empty text is the empty
    /// list; `default` when omitted (`None`: the attribute is required).
    pub fn i64_list_or(
        &self,
        name: &'a str,
        default: Option<Vec<i64>>,
    ) -> Result<Vec<i64>, OpError> {
        self.list_or(name, default, "integers")
    }

    /// A comma-separated list of numbers (`scales="2.0,2.0"`), as [`Self::i64_list_or`].
    pub fn f64_list_or(
        &self,
        name: &'a str,
        default: Option<Vec<f64>>,
    ) -> Result<Vec<f64>, OpError> {
        self.list_or(name, default, "numbers")
    }

    fn list_or<T: std::str::FromStr>(
        &self,
        name: &'a str,
        default: Option<Vec<T>>,
        what: &str,
    ) -> Result<Vec<T>, OpError> {
        let Some(a) = self.get(name) else {
            return default.ok_or_else(|| {
                OpError::attribute(
                    name,
                    format!("{} requires the attribute `{name}`", self.layer.type_name),
                )
            });
        };
        if a.value.trim().is_empty() {
            return Ok(Vec::new());
        }
        a.value
            .split(',')
            .map(|s| s.trim().parse::<T>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                OpError::attribute(
                    name,
                    format!("`{name}=\"{}\"` is not a list of {what}", a.value),
                )
            })
    }

    /// A floating-point attribute (`alpha="0.5"`, `min="-inf"` is not valid IR); `default`
    /// when omitted, which is what OpenVINO's loader gives for omitted required attributes.
    pub fn f64_or(&self, name: &'a str, default: f64) -> Result<f64, OpError> {
        let Some(a) = self.get(name) else {
            return Ok(default);
        };
        a.value.trim().parse::<f64>().map_err(|_| {
            OpError::attribute(name, format!("`{name}=\"{}\"` is not a number", a.value))
        })
    }

    /// An element type written as its enum name (`f32`, case-insensitive), as
    /// `Convert.destination_type` and `Parameter.element_type` are.
    pub fn element_type(&self, name: &'a str) -> Result<ElementType, OpError> {
        let a = self.required(name)?;
        ElementType::from_enum_name(a.value.trim()).ok_or_else(|| {
            OpError::attribute(
                name,
                format!(
                    "`{name}=\"{}\"` is not an element type name (f32, i64, boolean, ...)",
                    a.value
                ),
            )
        })
    }

    /// Names of `<data>` attributes that no one read.
    pub fn unread(&self) -> Vec<&'a Attr> {
        let read = self.read.borrow();
        self.layer
            .data
            .iter()
            .flat_map(|d| &d.attrs)
            .filter(|a| !read.contains(&&*a.name))
            .collect()
    }
}
