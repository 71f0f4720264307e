//! Parses the Prometheus text exposition format of a scrape.

use std::collections::BTreeMap;
use std::net::SocketAddr;

/// `/metrics` of `addr`, parsed; `None` while it cannot be fetched.
pub(crate) async fn scrape(addr: SocketAddr) -> Option<Scrape> {
    let body = kubeward::testing::scrape(addr).await.ok()?;
    Scrape::parse(&body).ok()
}

/// One sample line: `name{labels} value`.
#[derive(Debug)]
pub(super) struct Sample {
    pub(super) name: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) value: f64,
}

/// Every sample of one scrape, and the text it came from.
#[derive(Debug)]
pub(crate) struct Scrape {
    pub(super) text: String,
    pub(super) samples: Vec<Sample>,
}

impl Scrape {
    pub(super) fn parse(text: &str) -> anyhow::Result<Self> {
        let samples = text
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(sample)
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            text: text.to_owned(),
            samples,
        })
    }

    /// The samples of `name` whose labels include every pair of `labels`.
    pub(super) fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&str, &str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }

    /// The one sample of `name` with `labels`, if there is exactly one.
    pub(crate) fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut found = self.matching(name, labels);
        let first = found.next()?;
        found.next().is_none().then_some(first.value)
    }
}

fn sample(line: &str) -> anyhow::Result<Sample> {
    let bad = || anyhow::anyhow!("not a sample line: {line:?}");
    let (name, rest) = match line.find(['{', ' ']) {
        Some(at) => line.split_at(at),
        None => return Err(bad()),
    };
    let mut labels = BTreeMap::new();
    let rest = if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut end = None;
        loop {
            // label name up to '=' (or the closing brace)
            let mut key = String::new();
            for (i, c) in chars.by_ref() {
                match c {
                    '=' => break,
                    '}' => {
                        end = Some(i);
                        break;
                    }
                    ',' => {}
                    c => key.push(c),
                }
            }
            if end.is_some() {
                break;
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return Err(bad());
            }
            let mut value = String::new();
            let mut escaped = false;
            for (_, c) in chars.by_ref() {
                match (escaped, c) {
                    (false, '\\') => escaped = true,
                    (false, '"') => break,
                    (true, 'n') => {
                        value.push('\n');
                        escaped = false;
                    }
                    (_, c) => {
                        value.push(c);
                        escaped = false;
                    }
                }
            }
            labels.insert(key, value);
        }
        let end = end.ok_or_else(bad)?;
        &inner[end + 1..]
    } else {
        rest
    };
    let value = rest.split_whitespace().next().ok_or_else(bad)?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse()?,
    };
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

#[test]
fn the_parser_reads_labels_with_escapes_and_infinite_bounds() -> anyhow::Result<()> {
    let scrape = Scrape::parse(
        "# HELP x y\nx_bucket{a=\"1,2\",le=\"+Inf\"} 3\nplain 4.5\nq{v=\"say \\\"hi\\\"\"} 1\n",
    )?;
    assert_eq!(
        scrape.value("x_bucket", &[("a", "1,2"), ("le", "+Inf")]),
        Some(3.0)
    );
    assert_eq!(scrape.value("plain", &[]), Some(4.5));
    assert_eq!(scrape.value("q", &[("v", "say \"hi\"")]), Some(1.0));
    Ok(())
}
