//! Slurm's hostlist expressions (`g[1-4,7]`, `gpu-[01-02]`), as far as
//! the plugin writes and reads them: a gang's nodes go to the shim as one
//! expression, and a finished job's nodes come back as one.

/// `names` as one hostlist expression: runs of names that differ only in
/// a trailing number of the same width are bracketed (`g1,g2,g3` ->
/// `g[1-3]`), the rest listed, in the order given.
pub fn compress(names: &[String]) -> String {
    let mut groups: Vec<(&str, usize, Vec<u64>)> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let flush = |groups: &mut Vec<(&str, usize, Vec<u64>)>, parts: &mut Vec<String>| {
        for (prefix, digits, numbers) in groups.drain(..) {
            parts.push(bracketed(prefix, digits, &numbers));
        }
    };
    for name in names {
        match split_number(name) {
            Some((prefix, digits, n)) => match groups.last_mut() {
                Some((p, d, numbers)) if *p == prefix && *d == digits => numbers.push(n),
                _ => {
                    flush(&mut groups, &mut parts);
                    groups.push((prefix, digits, vec![n]));
                }
            },
            None => {
                flush(&mut groups, &mut parts);
                parts.push(name.clone());
            }
        }
    }
    flush(&mut groups, &mut parts);
    parts.join(",")
}

/// The name's prefix, its trailing number's width in digits, and the
/// number.
fn split_number(name: &str) -> Option<(&str, usize, u64)> {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 18 {
        return None;
    }
    let (prefix, number) = name.split_at(name.len() - digits);
    Some((prefix, digits, number.parse().ok()?))
}

fn bracketed(prefix: &str, digits: usize, numbers: &[u64]) -> String {
    let pad = |n: u64| format!("{n:0digits$}");
    if let [n] = numbers {
        return format!("{prefix}{}", pad(*n));
    }
    let mut ranges: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        ranges.push(if i == j {
            pad(numbers[i])
        } else {
            format!("{}-{}", pad(numbers[i]), pad(numbers[j]))
        });
        i = j + 1;
    }
    format!("{prefix}[{}]", ranges.join(","))
}

/// The hosts a hostlist expression names, in its order (`g[3-4],c1` ->
/// `g3 g4 c1`); one bracket per name, as Slurm writes them. At most
/// `limit` names: the rest is left out.
pub fn expand(list: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for item in top_level_items(list) {
        if out.len() >= limit {
            break;
        }
        let (Some(open), Some(close)) = (item.find('['), item.find(']')) else {
            out.push(item.to_string());
            continue;
        };
        if close < open {
            out.push(item.to_string());
            continue;
        }
        let (prefix, suffix) = (&item[..open], &item[close + 1..]);
        for range in item[open + 1..close].split(',') {
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            let (Ok(a), Ok(b)) = (lo.parse::<u64>(), hi.parse::<u64>()) else {
                continue;
            };
            let width = lo.len();
            for n in a..=b {
                if out.len() >= limit {
                    break;
                }
                out.push(format!("{prefix}{n:0width$}{suffix}"));
            }
        }
    }
    out
}

/// The comma-separated items of a list, commas inside brackets kept.
fn top_level_items(list: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn runs_of_numbered_names_are_bracketed() {
        assert_eq!(compress(&names(&["g1"])), "g1");
        assert_eq!(compress(&names(&["g1", "g2", "g3", "g7"])), "g[1-3,7]");
        assert_eq!(
            compress(&names(&["gpu-01", "gpu-02", "gpu-010", "c1"])),
            "gpu-[01-02],gpu-010,c1"
        );
        assert_eq!(compress(&names(&["login", "g2", "g3"])), "login,g[2-3]");
    }

    #[test]
    fn expressions_expand_to_their_hosts() {
        assert_eq!(expand("g1", 10), names(&["g1"]));
        assert_eq!(expand("g[3-4],c1", 10), names(&["g3", "g4", "c1"]));
        assert_eq!(
            expand("gpu-[01,09-10]", 10),
            names(&["gpu-01", "gpu-09", "gpu-10"])
        );
        assert_eq!(expand("g[1-1000000]", 3), names(&["g1", "g2", "g3"]));
        assert!(expand("", 10).is_empty());
        for list in [&["g1", "g2", "g7", "c1"][..], &["gpu-01", "gpu-02"]] {
            assert_eq!(expand(&compress(&names(list)), 10), names(list));
        }
    }
}
