//! What a run used — tokens and model — as the agent's own final event says; part of the run record.

/// What a run used, as the agent's own final event says (Claude's `result`, Codex's last
/// `turn.completed`, Gemini's `result.stats`). A figure the agent did not give stays `None` —
/// never 0 — so a chart can tell "none" from "unknown".
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    /// The model(s) that answered, most used first (`, `-separated when several).
    pub model: Option<String>,
    /// GitHub Copilot's premium requests (its billing unit: each model call counts its model's
    /// multiplier, so a fraction is possible), as its `result` event says; other agents have none.
    pub premium_requests: Option<f64>,
}

impl Usage {
    /// `None` when the agent gave no figure at all.
    pub fn or_none(self) -> Option<Usage> {
        (self != Usage::default()).then_some(self)
    }

    /// Model names from a `{name: {…tokens…}}` map, the one with the most `key` tokens first.
    pub fn models(map: &serde_json::Value, key: &str) -> Option<String> {
        let mut models: Vec<(&String, u64)> = map.as_object()?.iter().map(|(name, m)| (name, m[key].as_u64().unwrap_or(0))).collect();
        models.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        (!models.is_empty()).then(|| models.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "))
    }
}
