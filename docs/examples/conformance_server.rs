//! A template conformance server in Rust, standard library only.
//!
//! It speaks the JSON-lines protocol of docs/conformance.md on stdin and
//! stdout, so `policy-kernel verify --against-command ./conformance_server`
//! checks a Rust scheduler's own decision functions against the oracle.
//! Build it with nothing but `rustc`:
//!
//!     rustc -O --edition 2021 docs/examples/conformance_server.rs -o conformance_server
//!     policy-kernel verify --against-command ./conformance_server --quick
//!
//! To plug in an engine (mlxcel, say), replace the functions of the first
//! section with calls to the engine's own functions (or paste them in), and
//! keep `DECISIONS` to the decisions it has. Everything below that section is
//! the protocol: a small JSON reader and writer, and the request loop.
//!
//! The functions here are written from docs/rotation.md and answer as the
//! kernel does; `rustc --cfg broken` builds a copy whose grant expiry runs one
//! slice too many, which the kit catches (tests/oracle/conformance/test_rust_template.py).

use std::io::{self, BufRead, Write};

// ------------------------------------------------------------ the decisions
// Replace these with the engine's own functions.

/// The decisions this server answers (the hello's list).
const DECISIONS: [&str; 8] = [
    "backlog_admits",
    "backlog_append",
    "next_grant_index",
    "parse_grant_rounds",
    "parse_lane",
    "slice_grant_expired",
    "slice_takes_tick",
    "take_next_grantee",
];

/// The budget when the setting is unset or unreadable.
const DEFAULT_GRANT_ROUNDS: u64 = 8;

/// How many requests may wait in the grant backlog.
const BACKLOG_CAP: u64 = 2;

/// A grant backlog entry. `fields` keeps the entry whole, so the fields this server
/// does not read (request, kind, cancelled) are answered as they were given.
#[derive(Clone)]
struct Entry {
    lane: u8, // 0 low, 1 normal, 2 high
    skipped: u64,
    fields: Vec<(String, Json)>,
}

/// Whether the holder's grant is over: a positive budget, someone waiting, and
/// the budget's slices used.
#[cfg(not(broken))]
fn slice_grant_expired(slices_in_grant: u64, budget: u64, backlog_pending: bool) -> bool {
    budget > 0 && backlog_pending && slices_in_grant >= budget
}

/// The deliberately broken copy (`rustc --cfg broken`): one slice too many.
#[cfg(broken)]
fn slice_grant_expired(slices_in_grant: u64, budget: u64, backlog_pending: bool) -> bool {
    budget > 0 && backlog_pending && slices_in_grant > budget
}

/// Whether speculation takes this tick: it alternates with classic work.
fn slice_takes_tick(yielded: bool, others_have_work: bool) -> bool {
    !others_have_work || !yielded
}

/// The grant budget from the setting's raw text: mlxcel's own rule, std's
/// `trim` (Unicode White_Space) and `parse` (an optional `+`, ASCII digits,
/// within the integer's range), anything else the default.
fn parse_grant_rounds(raw: Option<&str>) -> u64 {
    raw.and_then(|text| text.trim().parse::<u64>().ok()).unwrap_or(DEFAULT_GRANT_ROUNDS)
}

/// The lane named by a client's header: trimmed, case-insensitive; anything
/// else (missing, empty, unknown) is normal.
fn parse_lane(header: Option<&str>) -> &'static str {
    match header.map(|text| text.trim().to_lowercase()).as_deref() {
        Some("high") => "high",
        Some("low") => "low",
        _ => "normal",
    }
}

/// Whether one more request may wait in the backlog.
fn backlog_admits(backlog_len: u64, budget: u64) -> bool {
    budget > 0 && backlog_len < BACKLOG_CAP
}

/// The index to grant next: an entry skipped `skip_cap` times or more goes
/// first (the most skipped, the earliest among equals), else the highest lane,
/// the earliest among equals; `None` for an empty backlog.
fn next_grant_index(entries: &[Entry], skip_cap: u64) -> Option<usize> {
    let mut best: Option<usize> = None;
    if entries.iter().any(|entry| entry.skipped >= skip_cap) {
        for (index, entry) in entries.iter().enumerate() {
            if best.map_or(true, |b| entry.skipped > entries[b].skipped) {
                best = Some(index);
            }
        }
    } else {
        for (index, entry) in entries.iter().enumerate() {
            if best.map_or(true, |b| entry.lane > entries[b].lane) {
                best = Some(index);
            }
        }
    }
    best
}

/// The chosen entry and the backlog left, every other entry skipped once more.
fn take_next_grantee(backlog: &[Entry], skip_cap: u64) -> Option<(Entry, Vec<Entry>)> {
    let index = next_grant_index(backlog, skip_cap)?;
    let rest = backlog
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, entry)| Entry { skipped: entry.skipped.saturating_add(1), ..entry.clone() })
        .collect();
    Some((backlog[index].clone(), rest))
}

/// Re-entry of a parked job: at the back, with no skips.
fn backlog_append(backlog: &[Entry], entry: &Entry) -> Vec<Entry> {
    let mut appended = backlog.to_vec();
    appended.push(Entry { skipped: 0, ..entry.clone() });
    appended
}

// ------------------------------------------------------------ JSON values

/// A JSON value; numbers keep their text so integers up to 2^64 - 1 (and
/// beyond) are read exactly.
#[derive(Clone, Debug)]
enum Json {
    Null,
    Bool(bool),
    Number(String),
    Text(String),
    List(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn field(&self, name: &str) -> Result<&Json, String> {
        match self {
            Json::Object(fields) => fields
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value)
                .ok_or_else(|| format!("missing input: {name}")),
            _ => Err("the inputs are not a JSON object".to_string()),
        }
    }

    fn count(&self, name: &str) -> Result<u64, String> {
        match self.field(name)? {
            Json::Number(text) => text.parse::<u64>().map_err(|_| format!("{name} is not a count")),
            _ => Err(format!("{name} is not a count")),
        }
    }

    fn flag(&self, name: &str) -> Result<bool, String> {
        match self.field(name)? {
            Json::Bool(value) => Ok(*value),
            _ => Err(format!("{name} is not true or false")),
        }
    }

    fn text_or_null(&self, name: &str) -> Result<Option<&str>, String> {
        match self.field(name)? {
            Json::Text(text) => Ok(Some(text)),
            Json::Null => Ok(None),
            _ => Err(format!("{name} is not text or null")),
        }
    }

    fn entries(&self, name: &str) -> Result<Vec<Entry>, String> {
        match self.field(name)? {
            Json::List(items) => items.iter().map(entry_of).collect(),
            _ => Err(format!("{name} is not a list")),
        }
    }
}

fn entry_of(value: &Json) -> Result<Entry, String> {
    let lane = match value.field("lane")? {
        Json::Text(text) if text == "low" => 0,
        Json::Text(text) if text == "normal" => 1,
        Json::Text(text) if text == "high" => 2,
        _ => return Err("unknown lane".to_string()),
    };
    let skipped = value.count("skipped")?;
    let fields = match value {
        Json::Object(fields) => fields.clone(),
        _ => Vec::new(),
    };
    Ok(Entry { lane, skipped, fields })
}

fn entry_json(entry: &Entry) -> Json {
    let mut fields = entry.fields.clone();
    for (key, value) in fields.iter_mut() {
        if key == "skipped" {
            *value = Json::Number(entry.skipped.to_string());
        }
    }
    Json::Object(fields)
}

fn entries_json(entries: &[Entry]) -> Json {
    Json::List(entries.iter().map(entry_json).collect())
}

/// One request's answer, or the reason there is none.
fn answer(decision: &str, inputs: &Json) -> Result<Json, String> {
    Ok(match decision {
        "slice_grant_expired" => Json::Bool(slice_grant_expired(
            inputs.count("slices_in_grant")?,
            inputs.count("budget")?,
            inputs.flag("backlog_pending")?,
        )),
        "slice_takes_tick" => Json::Bool(slice_takes_tick(
            inputs.flag("yielded")?,
            inputs.flag("others_have_work")?,
        )),
        "parse_grant_rounds" => {
            Json::Number(parse_grant_rounds(inputs.text_or_null("raw")?).to_string())
        }
        "parse_lane" => Json::Text(parse_lane(inputs.text_or_null("header")?).to_string()),
        "backlog_admits" => {
            Json::Bool(backlog_admits(inputs.count("backlog_len")?, inputs.count("budget")?))
        }
        "next_grant_index" => {
            match next_grant_index(&inputs.entries("entries")?, inputs.count("skip_cap")?) {
                Some(index) => Json::Number(index.to_string()),
                None => Json::Null,
            }
        }
        "take_next_grantee" => {
            match take_next_grantee(&inputs.entries("backlog")?, inputs.count("skip_cap")?) {
                Some((chosen, rest)) => Json::Object(vec![
                    ("chosen".to_string(), entry_json(&chosen)),
                    ("backlog".to_string(), entries_json(&rest)),
                ]),
                None => Json::Null,
            }
        }
        "backlog_append" => entries_json(&backlog_append(
            &inputs.entries("backlog")?,
            &entry_of(inputs.field("entry")?)?,
        )),
        _ => return Err(format!("unknown decision: {}", decision.chars().take(80).collect::<String>())),
    })
}

// ------------------------------------------------------------ reading JSON

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    fn skip_space(&mut self) {
        while self.at < self.text.len() && b" \t\r\n".contains(&self.text[self.at]) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.skip_space();
        if self.text.get(self.at) == Some(&byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", byte as char, self.at))
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.skip_space();
        match self.text.get(self.at) {
            Some(b'{') => self.nested(|reader| reader.object()),
            Some(b'[') => self.nested(|reader| reader.list()),
            Some(b'"') => Ok(Json::Text(self.text_value()?)),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(_) => self.number(),
            None => Err("unexpected end of line".to_string()),
        }
    }

    fn nested(&mut self, read: fn(&mut Self) -> Result<Json, String>) -> Result<Json, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("nested too deeply".to_string());
        }
        let value = read(self);
        self.depth -= 1;
        value
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if self.text[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(format!("unexpected text at byte {}", self.at))
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.at;
        while self.at < self.text.len() && b"+-0123456789.eE".contains(&self.text[self.at]) {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.text[start..self.at]).unwrap_or("");
        if text.is_empty() || text.parse::<f64>().is_err() {
            return Err(format!("not a number at byte {start}"));
        }
        Ok(Json::Number(text.to_string()))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.text.get(self.at..self.at + 4).ok_or("short \\u escape")?;
        let digits = std::str::from_utf8(digits).map_err(|_| "bad \\u escape")?;
        self.at += 4;
        u32::from_str_radix(digits, 16).map_err(|_| "bad \\u escape".to_string())
    }

    fn text_value(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self.at < self.text.len() && !b"\"\\".contains(&self.text[self.at]) {
                self.at += 1;
            }
            out.push_str(std::str::from_utf8(&self.text[start..self.at]).map_err(|_| "not UTF-8")?);
            match self.text.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let escape = *self.text.get(self.at + 1).ok_or("unfinished escape")?;
                    self.at += 2;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut code = self.hex4()?;
                            if (0xD800..0xDC00).contains(&code)
                                && self.text[self.at..].starts_with(b"\\u")
                            {
                                self.at += 2;
                                let low = self.hex4()?;
                                code = 0x10000 + ((code - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF);
                            }
                            out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                        }
                        _ => return Err("unknown escape".to_string()),
                    }
                }
                _ => return Err("unfinished string".to_string()),
            }
        }
    }

    fn list(&mut self) -> Result<Json, String> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.skip_space();
        if self.text.get(self.at) == Some(&b']') {
            self.at += 1;
            return Ok(Json::List(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_space();
            match self.text.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Json::List(items));
                }
                _ => return Err(format!("expected ',' or ']' at byte {}", self.at)),
            }
        }
    }

    fn object(&mut self) -> Result<Json, String> {
        self.expect(b'{')?;
        let mut fields = Vec::new();
        self.skip_space();
        if self.text.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Ok(Json::Object(fields));
        }
        loop {
            self.skip_space();
            let key = self.text_value()?;
            self.expect(b':')?;
            fields.push((key, self.value()?));
            self.skip_space();
            match self.text.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Json::Object(fields));
                }
                _ => return Err(format!("expected ',' or '}}' at byte {}", self.at)),
            }
        }
    }
}

fn parse(line: &[u8]) -> Result<Json, String> {
    let mut reader = Reader { text: line, at: 0, depth: 0 };
    let value = reader.value()?;
    reader.skip_space();
    if reader.at != line.len() {
        return Err("text after the JSON value".to_string());
    }
    Ok(value)
}

// ------------------------------------------------------------ writing JSON

fn write_text(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_json(value: &Json, out: &mut String) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Json::Number(text) => out.push_str(text),
        Json::Text(text) => write_text(text, out),
        Json::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Json::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_text(key, out);
                out.push(':');
                write_json(item, out);
            }
            out.push('}');
        }
    }
}

// ------------------------------------------------------------ the request loop

fn respond(line: &[u8]) -> Json {
    let request = match parse(line) {
        Ok(request @ Json::Object(_)) => request,
        Ok(_) => return error(Json::Null, "the request is not a JSON object".to_string()),
        Err(reason) => return error(Json::Null, format!("the request is not a JSON line: {reason}")),
    };
    let id = request.field("id").cloned().unwrap_or(Json::Null);
    let decision = match request.field("decision") {
        Ok(Json::Text(name)) => name.clone(),
        _ => return error(id, "the request names no decision".to_string()),
    };
    if decision == "hello" {
        let names = DECISIONS.iter().map(|name| Json::Text(name.to_string())).collect();
        let hello = Json::Object(vec![
            ("protocol".to_string(), Json::Number("1".to_string())),
            ("decisions".to_string(), Json::List(names)),
        ]);
        return Json::Object(vec![("id".to_string(), id), ("answer".to_string(), hello)]);
    }
    let inputs = request.field("inputs").cloned().unwrap_or(Json::Null);
    match answer(&decision, &inputs) {
        Ok(value) => Json::Object(vec![("id".to_string(), id), ("answer".to_string(), value)]),
        Err(reason) => error(id, reason),
    }
}

fn error(id: Json, reason: String) -> Json {
    Json::Object(vec![("id".to_string(), id), ("error".to_string(), Json::Text(reason))])
}

fn main() {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    // One request per line: answer it and flush before reading on (the kit streams).
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut text = String::new();
        write_json(&respond(&line), &mut text);
        text.push('\n');
        if out.write_all(text.as_bytes()).and_then(|()| out.flush()).is_err() {
            break; // the kit went away
        }
    }
}
