//! The native cluster file:
//!
//! ```yaml
//! flavors:
//!   - name: gpu
//!     slots: 8
//!     per_node: 4   # optional: slots per node (default 1); `gpus_per_node` says the same
//!   - name: cpu
//!     slots: 2
//! users:            # optional; users not listed have weight 1
//!   - name: alice
//!     weight: 2
//! ```

use super::InputError;
use crate::model::{Cluster, Flavor, User, MAX_SLOTS};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterFile {
    flavors: Vec<FlavorEntry>,
    #[serde(default)]
    users: Vec<UserEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlavorEntry {
    name: String,
    slots: usize,
    #[serde(default, alias = "gpus_per_node")]
    per_node: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    name: String,
    weight: f64,
}

/// A cluster and the user weights it declares.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSpec {
    /// The flavors, in file order.
    pub cluster: Cluster,
    /// Weights of the users the file lists, by name; others weigh 1.
    pub weights: Vec<(String, f64)>,
}

/// Reads a cluster file; errors name the line where the YAML reader knows it.
pub fn parse(file: &str, text: &str) -> Result<ClusterSpec, InputError> {
    let parsed: ClusterFile = serde_yaml_ng::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line());
        InputError::at(file, line, e.to_string())
    })?;
    // serde_yaml_ng keeps no spans for values, so semantic errors point at
    // the line where the offending name appears.
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).map(|i| i + 1);
    if parsed.flavors.is_empty() {
        return Err(InputError::at(
            file,
            line_of("flavors"),
            "no flavors defined",
        ));
    }
    let mut flavors: Vec<Flavor> = Vec::new();
    for entry in parsed.flavors {
        let line = line_of(&entry.name);
        if !valid_name(&entry.name) {
            return Err(InputError::at(
                file,
                line,
                format!(
                    "flavor name '{}' must be letters, digits, '-', '_' or '.'",
                    entry.name
                ),
            ));
        }
        if flavors.iter().any(|f| f.name == entry.name) {
            return Err(InputError::at(
                file,
                line,
                format!("flavor '{}' defined twice", entry.name),
            ));
        }
        let total: usize = flavors.iter().map(|f| f.slots).sum();
        if entry.slots > MAX_SLOTS - total {
            return Err(InputError::at(
                file,
                line_of(&entry.slots.to_string()).or(line),
                format!(
                    "flavor '{}': {} slots take the cluster past {MAX_SLOTS} slots in all",
                    entry.name, entry.slots
                ),
            ));
        }
        let per_node = entry.per_node.unwrap_or(1);
        if per_node == 0 || entry.slots % per_node != 0 {
            return Err(InputError::at(
                file,
                line_of("per_node").or(line_of("gpus_per_node")).or(line),
                format!(
                    "flavor '{}': {} slots are not whole nodes of {per_node} slots per node",
                    entry.name, entry.slots
                ),
            ));
        }
        flavors.push(Flavor {
            name: entry.name,
            slots: entry.slots,
            per_node,
        });
    }
    if flavors.iter().all(|f| f.slots == 0) {
        return Err(InputError::at(
            file,
            line_of("slots"),
            "every flavor has 0 slots",
        ));
    }
    let mut weights: Vec<(String, f64)> = Vec::new();
    for user in parsed.users {
        let line = line_of(&user.name);
        let user = User::new(user.name, user.weight)
            .map_err(|e| InputError::at(file, line, e.to_string()))?;
        if weights.iter().any(|(n, _)| *n == user.name) {
            return Err(InputError::at(
                file,
                text.lines()
                    .enumerate()
                    .filter(|(_, l)| l.contains(&user.name))
                    .nth(1)
                    .map(|(i, _)| i + 1)
                    .or(line),
                format!("user '{}' listed twice", user.name),
            ));
        }
        weights.push((user.name, user.weight));
    }
    Ok(ClusterSpec {
        cluster: Cluster { flavors },
        weights,
    })
}

/// Whether `name` may name a flavor: non-empty ASCII letters, digits, `-`, `_`
/// and `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flavors_and_weights() {
        let spec = parse(
            "c.yaml",
            "flavors:\n  - name: gpu\n    slots: 2\n  - name: cpu\n    slots: 3\nusers:\n  - name: a\n    weight: 2\n",
        )
        .unwrap();
        assert_eq!(
            spec.cluster.flavors[1],
            Flavor {
                name: "cpu".into(),
                slots: 3,
                per_node: 1,
            }
        );
        assert_eq!(spec.weights, vec![("a".to_string(), 2.0)]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("c.yaml", "flavors:\n  - name: gpu\n    slots: -2\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("c.yaml", Some(3)));
        let e = parse(
            "c.yaml",
            "flavors:\n  - name: gpu\n    slots: 1\n  - name: gpu\n    slots: 1\n",
        )
        .unwrap_err();
        assert!(e.message.contains("twice"), "{e}");
        let e = parse("c.yaml", "flavors:\n  - name: gpu\n    slot: 1\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
    }

    #[test]
    fn slot_counts_are_bounded_and_users_listed_once() {
        for slots in ["18446744073709551615", "10000000000", "100001"] {
            let text = format!("flavors:\n  - name: gpu\n    slots: {slots}\n");
            let e = parse("c.yaml", &text).unwrap_err();
            assert_eq!(e.line, Some(3), "{e}");
            assert!(e.message.contains("100000 slots in all"), "{e}");
        }
        let text = "flavors:\n  - name: gpu\n    slots: 60000\n  - name: cpu\n    slots: 60000\n";
        let e = parse("c.yaml", text).unwrap_err();
        assert!(e.message.contains("'cpu'"), "{e}");
        let text = "flavors:\n  - name: gpu\n    slots: 1\nusers:\n  - name: ann\n    weight: 1\n  - name: ann\n    weight: 3\n";
        let e = parse("c.yaml", text).unwrap_err();
        assert_eq!(e.line, Some(7), "{e}");
        assert!(e.message.contains("listed twice"), "{e}");
    }
}
