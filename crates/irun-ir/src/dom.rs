//! A small positioned element tree built from quick-xml events.
//!
//! The IR is read in two steps: this module checks well-formedness and keeps every element and
//! attribute with its line and column; `reader.rs` then interprets the tree as IR. Entity
//! references other than the five predefined ones and character references are errors and are
//! never expanded; one DOCTYPE before the root element is tolerated (nothing in it is ever used).
//! XML 1.0's character rule holds for the raw text and for what character references produce:
//! tab, LF, CR and U+0020 and above, without U+FFFE and U+FFFF (a `str` holds no surrogates).

use std::borrow::Cow;

use quick_xml::escape::EscapeError;
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use crate::diag::{codes, Diagnostic, Pos};

/// Nesting deeper than this is rejected: no real IR nests more than ~10 levels.
const MAX_DEPTH: usize = 256;

/// Names of elements and attributes IR files repeat thousands of times; they are shared rather
/// than allocated per occurrence (allocation was most of the reader's time on large models).
const VOCABULARY: &[&str] = &[
    "net",
    "layers",
    "layer",
    "edges",
    "edge",
    "data",
    "input",
    "output",
    "port",
    "dim",
    "rt_info",
    "attribute",
    "info",
    "id",
    "name",
    "type",
    "version",
    "precision",
    "names",
    "from-layer",
    "from-port",
    "to-layer",
    "to-port",
    "element_type",
    "shape",
    "offset",
    "size",
    "value",
    "output_names",
    "reduction",
    "use_init_val",
    "destination_type",
    "output_type",
];

fn intern(s: &str) -> Cow<'static, str> {
    match VOCABULARY.iter().find(|v| **v == s) {
        Some(v) => Cow::Borrowed(v),
        None => Cow::Owned(s.to_string()),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    pub name: Cow<'static, str>,
    pub value: String,
    pub pos: Pos,
}

#[derive(Clone, Debug, Default)]
pub struct Element {
    pub name: Cow<'static, str>,
    pub attrs: Vec<Attr>,
    pub children: Vec<Element>,
    /// Concatenated character data directly inside this element.
    pub text: String,
    pub pos: Pos,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.name == name)
    }
}

/// Maps byte offsets to line/column.
pub struct LineIndex<'a> {
    src: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(src: &'a str) -> LineIndex<'a> {
        let mut line_starts = vec![0];
        line_starts.extend(
            src.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { src, line_starts }
    }

    pub fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.src.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self
            .src
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        Pos {
            line: line as u32 + 1,
            col: col as u32 + 1,
        }
    }
}

/// Position of `line:col` for a byte offset in raw (possibly non-UTF-8) bytes.
pub fn pos_in_bytes(bytes: &[u8], offset: usize) -> Pos {
    let prefix = &bytes[..offset.min(bytes.len())];
    let line = prefix.iter().filter(|&&b| b == b'\n').count();
    let start = prefix
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    Pos {
        line: line as u32 + 1,
        col: (offset - start) as u32 + 1,
    }
}

fn malformed(lines: &LineIndex, offset: usize, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(codes::MALFORMED_XML, msg).at(lines.pos(offset))
}

/// Byte offset of a slice that borrows from `src`, else `fallback`.
fn offset_in(src: &str, slice: &str, fallback: usize) -> usize {
    let base = src.as_ptr() as usize;
    let p = slice.as_ptr() as usize;
    if p >= base && p <= base + src.len() {
        p - base
    } else {
        fallback
    }
}

/// XML 1.0's `Char` production, for the characters a Rust `str` can hold.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{fffe}' && c != '\u{ffff}')
}

/// The first character of the document that XML 1.0 forbids, as a diagnostic.
fn check_characters(src: &str, lines: &LineIndex) -> Result<(), Diagnostic> {
    // Bytes first: every forbidden character starts with a control byte or with 0xEF (the
    // lead byte of U+FFFE/U+FFFF), so text without them, nearly all of it, is not decoded.
    let bytes = src.as_bytes();
    let suspect = |b: &u8| (*b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || *b == 0xEF;
    let mut from = 0;
    while let Some(i) = bytes[from..].iter().position(suspect) {
        let at = from + i;
        let c = src[at..].chars().next().unwrap_or(' ');
        if !is_xml_char(c) {
            return Err(malformed(
                lines,
                at,
                format!("character U+{:04X} is not allowed in XML", c as u32),
            ));
        }
        from = at + c.len_utf8();
    }
    Ok(())
}

/// An error if a character reference produced a character XML 1.0 forbids.
fn check_referenced(
    text: &str,
    lines: &LineIndex,
    at: usize,
    what: &str,
) -> Result<(), Diagnostic> {
    match text.chars().find(|c| !is_xml_char(*c)) {
        None => Ok(()),
        Some(c) => Err(malformed(
            lines,
            at,
            format!(
                "{what} holds a reference to U+{:04X}, which is not allowed in XML",
                c as u32
            ),
        )),
    }
}

fn resolve_predefined(name: &str) -> Option<char> {
    Some(match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "apos" => '\'',
        "quot" => '"',
        _ => return None,
    })
}

fn start_element(
    src: &str,
    lines: &LineIndex,
    e: &BytesStart,
    at: usize,
) -> Result<Element, Diagnostic> {
    let name = intern(e.name().as_ref());
    let mut el = Element {
        name,
        pos: lines.pos(at),
        ..Element::default()
    };
    for attr in e.attributes() {
        let attr = attr.map_err(|err| {
            malformed(lines, at, format!("bad attribute in <{}>: {err}", el.name))
        })?;
        let key_off = offset_in(src, attr.key.as_ref(), at);
        let key = intern(attr.key.as_ref());
        let value = attr
            .normalized_value(XmlVersion::Implicit1_0)
            .map_err(|err| {
                let msg = format!("attribute `{key}` of <{}>: {err}", el.name);
                let entity = matches!(
                    err,
                    quick_xml::Error::Escape(
                        EscapeError::UnrecognizedEntity(..) | EscapeError::TooManyNestedEntities
                    )
                );
                if entity {
                    Diagnostic::error(
                        codes::ENTITY,
                        format!("{msg} (entity references are never expanded)"),
                    )
                    .at(lines.pos(key_off))
                } else {
                    malformed(lines, key_off, msg)
                }
            })?;
        check_referenced(
            &value,
            lines,
            key_off,
            &format!("attribute `{key}` of <{}>", el.name),
        )?;
        el.attrs.push(Attr {
            name: key,
            value: value.into_owned(),
            pos: lines.pos(key_off),
        });
    }
    Ok(el)
}

/// Parses a whole document into its root element.
pub fn parse(src: &str) -> Result<Element, Diagnostic> {
    let lines = LineIndex::new(src);
    check_characters(src, &lines)?;
    let mut reader = Reader::from_str(src);
    reader.config_mut().check_end_names = true;
    reader.config_mut().check_comments = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let mut doctype_seen = false;
    loop {
        let before = reader.buffer_position() as usize;
        let event = reader.read_event().map_err(|err| {
            malformed(
                &lines,
                reader.error_position() as usize,
                format!("malformed XML: {err}"),
            )
        })?;
        let at = |slice: &str| offset_in(src, slice, before).saturating_sub(1);
        match event {
            Event::Start(e) | Event::Empty(e) if root.is_some() && stack.is_empty() => {
                return Err(malformed(
                    &lines,
                    at(e.as_ref()),
                    format!("second root element <{}>", e.name().as_ref()),
                ));
            }
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(malformed(
                        &lines,
                        before,
                        format!("elements nested deeper than {MAX_DEPTH} levels"),
                    ));
                }
                stack.push(start_element(src, &lines, &e, at(e.as_ref()))?);
            }
            Event::Empty(e) => {
                let el = start_element(src, &lines, &e, at(e.as_ref()))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::End(_) => {
                let el = stack
                    .pop()
                    .ok_or_else(|| malformed(&lines, before, "end tag without start tag"))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                let text = t.xml10_content();
                match stack.last_mut() {
                    Some(el) => el.text.push_str(&text),
                    None if text.trim().is_empty() => {}
                    None => return Err(malformed(&lines, before, "text outside the root element")),
                }
            }
            Event::CData(t) => {
                if let Some(el) = stack.last_mut() {
                    el.text.push_str(&t);
                }
            }
            Event::GeneralRef(r) => {
                let name = r.to_string();
                let ch = if r.is_char_ref() {
                    r.resolve_char_ref().ok().flatten()
                } else {
                    resolve_predefined(&name)
                };
                let ch = match ch {
                    Some(c) if is_xml_char(c) => c,
                    Some(c) => {
                        return Err(malformed(
                            &lines,
                            before,
                            format!(
                                "character reference `&{name};` is to U+{:04X}, which is not allowed in XML",
                                c as u32
                            ),
                        ))
                    }
                    None if r.is_char_ref() => {
                        return Err(malformed(
                            &lines,
                            before,
                            format!("character reference `&{name};` does not name a character allowed in XML"),
                        ))
                    }
                    None => {
                        return Err(Diagnostic::error(
                            codes::ENTITY,
                            format!("entity reference `&{name};` is not allowed in IR (entities are never expanded)"),
                        )
                        .at(lines.pos(before)))
                    }
                };
                match stack.last_mut() {
                    Some(el) => el.text.push(ch),
                    None => {
                        return Err(malformed(
                            &lines,
                            before,
                            "reference outside the root element",
                        ))
                    }
                }
            }
            // The declaration may only open the document (after a byte-order mark at most).
            Event::Decl(_) if !src[..before].trim_start_matches('\u{feff}').is_empty() => {
                return Err(malformed(
                    &lines,
                    before,
                    "the XML declaration must be at the very start of the file",
                ));
            }
            Event::DocType(_) if doctype_seen => {
                return Err(malformed(&lines, before, "a second DOCTYPE"));
            }
            Event::DocType(_) if root.is_some() || !stack.is_empty() => {
                return Err(malformed(
                    &lines,
                    before,
                    "the DOCTYPE must come before the root element",
                ));
            }
            Event::DocType(_) => doctype_seen = true,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    if let Some(open) = stack.last() {
        return Err(Diagnostic::error(
            codes::MALFORMED_XML,
            format!("unexpected end of file: <{}> is not closed", open.name),
        )
        .at(open.pos));
    }
    root.ok_or_else(|| {
        Diagnostic::error(codes::NOT_XML, "the file has no root element")
            .at(Pos { line: 1, col: 1 })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> Diagnostic {
        parse(src).unwrap_err()
    }

    #[test]
    fn keeps_positions_of_elements_and_attributes() {
        let root = parse(
            "<?xml version=\"1.0\"?>\n<net version=\"11\">\n\t<layers a=\"x &amp; y\"/>\n</net>\n",
        )
        .unwrap();
        assert_eq!(root.name, "net");
        assert_eq!(root.pos, Pos { line: 2, col: 1 });
        assert_eq!(root.attrs[0].pos, Pos { line: 2, col: 6 });
        let layers = &root.children[0];
        assert_eq!(layers.pos, Pos { line: 3, col: 2 });
        assert_eq!(layers.attrs[0].value, "x & y");
    }

    #[test]
    fn rejects_malformed_documents() {
        let e = err("<net>\n<a>\n</net>");
        assert_eq!(e.code, codes::MALFORMED_XML);
        assert!(e.message.contains("malformed"), "{}", e.message);
        let e = err("<net/><net/>");
        assert!(e.message.contains("second root"), "{}", e.message);
        let e = err("<net>\n  <layers>");
        assert!(e.message.contains("not closed"), "{}", e.message);
        assert_eq!(e.pos, Some(Pos { line: 2, col: 3 }));
        let e = err("<net a=\"1\" a=\"2\"/>");
        assert!(e.message.contains("bad attribute"), "{}", e.message);
        assert_eq!(err("").code, codes::NOT_XML);
    }

    #[test]
    fn entities_are_never_expanded() {
        let e =
            err("<!DOCTYPE net [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>\n<net>&xxe;</net>");
        assert_eq!(e.code, codes::ENTITY);
        assert_eq!(e.pos.unwrap().line, 2);
        let e = err("<!DOCTYPE net [<!ENTITY a \"b\">]><net x=\"&a;\"/>");
        assert_eq!(e.code, codes::ENTITY);
        let ok = parse("<!DOCTYPE net><net>&#65;&lt;</net>").unwrap();
        assert_eq!(ok.text, "A<");
    }

    #[test]
    fn characters_xml_forbids_are_errors_with_their_position() {
        let e = err("<net>\n  <a x=\"1\u{1}\"/></net>");
        assert_eq!(e.code, codes::MALFORMED_XML);
        assert!(e.message.contains("U+0001"), "{}", e.message);
        assert_eq!(e.pos, Some(Pos { line: 2, col: 10 }));
        for bad in [
            "<net>\u{0}</net>",
            "<net>\u{ffff}</net>",
            "<net a='\u{fffe}'/>",
            "<!-- \u{1b} --><net/>",
        ] {
            assert_eq!(err(bad).code, codes::MALFORMED_XML, "{bad:?}");
        }
        // References that resolve to forbidden characters, in text and in attributes.
        for bad in [
            "<net>&#0;</net>",
            "<net>&#x1;</net>",
            "<net a=\"&#0;\"/>",
            "<net a=\"x&#xFFFE;\"/>",
        ] {
            let e = err(bad);
            assert_eq!(e.code, codes::MALFORMED_XML, "{bad:?}: {}", e.message);
            assert!(e.message.contains("in XML"), "{bad:?}: {}", e.message);
        }
        // What XML allows: tab, LF, CR, the rest of the BMP and beyond, and their references.
        let ok = parse("<net a=\"&#9;\u{e9}\u{1f600}\">\t\r\n&#x10FFFF;\u{fffd}</net>").unwrap();
        assert_eq!(ok.text, "\t\n\u{10ffff}\u{fffd}");
    }

    #[test]
    fn declaration_and_doctype_only_where_xml_allows_them() {
        let e = err("\n<?xml version=\"1.0\"?><net/>");
        assert!(e.message.contains("very start"), "{}", e.message);
        assert_eq!(e.pos, Some(Pos { line: 2, col: 1 }));
        assert!(err("<net/><?xml version=\"1.0\"?>")
            .message
            .contains("very start"));
        assert!(err("<net/><!DOCTYPE net>")
            .message
            .contains("before the root"));
        assert!(err("<!DOCTYPE net><!DOCTYPE net><net/>")
            .message
            .contains("second DOCTYPE"));
        parse("\u{feff}<?xml version=\"1.0\"?>\n<!DOCTYPE net>\n<net/>\n<!-- end -->").unwrap();
    }

    #[test]
    fn too_deep_nesting_is_an_error_not_a_stack_overflow() {
        let src = format!("{}{}", "<a>".repeat(10_000), "</a>".repeat(10_000));
        assert!(err(&src).message.contains("nested deeper"));
    }
}
