//! Reports are untrusted Markdown written by an agent. They become HTML here, in Rust, in two
//! layers, before any face sees them:
//!
//! 1. pulldown-cmark with raw HTML turned into visible text (a report that says `<script>` shows
//!    the characters `<script>`), and images turned into links (an `<img>` would load a remote
//!    URL: a tracking pixel, and the CSP would block it anyway);
//! 2. ammonia over the result, with a small allow-list of tags, only `http`, `https` and `mailto`
//!    links, and `rel="noopener noreferrer"` — so even a bug in layer 1 cannot produce script,
//!    event handlers, `javascript:` URLs, forms or frames.
//!
//! The window inserts only this function's output as HTML.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};
use std::collections::HashSet;

/// Longest report rendered as Markdown; past this the rest is cut with a note (the full text stays
/// in report.md). A megabyte of Markdown is already far more than a window can show usefully.
const MAX_RENDERED: usize = 1 << 20;

/// Render a report to sanitized HTML.
pub fn render(markdown: &str) -> String {
    let (text, cut) = match markdown.char_indices().nth(MAX_RENDERED) {
        Some((at, _)) => (&markdown[..at], true),
        None => (markdown, false),
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).map(|ev| match ev {
        // Layer 1: raw HTML is shown, never interpreted.
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        Event::Start(Tag::Image { dest_url, title, .. }) => {
            Event::Start(Tag::Link { link_type: pulldown_cmark::LinkType::Inline, dest_url, title, id: CowStr::Borrowed("") })
        }
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut html = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    let mut clean = sanitizer().clean(&html).to_string();
    if cut {
        clean.push_str("<p><em>The report is longer than the window shows; the full text is in report.md.</em></p>");
    }
    clean
}

fn sanitizer() -> ammonia::Builder<'static> {
    let tags: HashSet<&str> = [
        "a", "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li",
        "table", "thead", "tbody", "tr", "th", "td", "input",
    ]
    .into_iter()
    .collect();
    let mut b = ammonia::Builder::default();
    b.tags(tags)
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .link_rel(Some("noopener noreferrer"))
        .url_relative(ammonia::UrlRelative::Deny)
        .generic_attributes(HashSet::new())
        .tag_attributes(
            [("a", ["href", "title"].into_iter().collect()), ("th", ["align"].into_iter().collect()), ("td", ["align"].into_iter().collect()), ("ol", ["start"].into_iter().collect()), ("input", ["type", "checked", "disabled"].into_iter().collect())]
                .into_iter()
                .collect(),
        )
        // Task-list checkboxes only, and never editable.
        .set_tag_attribute_value("input", "disabled", "")
        .clean_content_tags(["script", "style"].into_iter().collect());
    b
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn renders_common_markdown() {
        let html = render("## PR review\n\n- **3** PRs\n- `cargo test` ok\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[docs](https://example.com/x)");
        assert!(html.contains("<h2>PR review</h2>"), "{html}");
        assert!(html.contains("<li><strong>3</strong> PRs</li>"), "{html}");
        assert!(html.contains("<code>cargo test</code>"), "{html}");
        assert!(html.contains("<td>1</td>"), "{html}");
        assert!(html.contains(r#"<a href="https://example.com/x" rel="noopener noreferrer">docs</a>"#), "{html}");
    }

    #[test]
    fn hostile_reports_are_inert() {
        let hostile = concat!(
            "<script>window.__pwned = 1</script>\n\n",
            "<img src=x onerror=\"window.__pwned = 2\">\n\n",
            "[click](javascript:window.__pwned=3) [data](data:text/html,<script>alert(1)</script>) [rel](/etc/passwd)\n\n",
            "![pixel](https://tracker.example/p.gif)\n\n",
            "<a href=\"https://x\" onclick=\"steal()\">a</a> <iframe src=\"https://evil\"></iframe> <form action=\"https://evil\"><input name=q></form>\n\n",
            "text <b onmouseover=alert(1)>bold</b> <style>body{display:none}</style>\n",
        );
        let html = render(hostile);
        // Every real tag (text is escaped, so a `<` in the output always opens one).
        let tags: Vec<String> = html.split('<').skip(1).map(|t| t.split('>').next().unwrap_or("").to_lowercase()).collect();
        let allowed = ["p", "/p", "a ", "/a", "br", "code", "/code"];
        for tag in &tags {
            assert!(allowed.iter().any(|a| tag.starts_with(a)), "unexpected tag <{tag}> in {html}");
            for bad in ["on", "javascript:", "data:", "/etc", "style"] {
                let attrs = tag.split_once(' ').map(|(_, a)| a).unwrap_or("");
                assert!(!attrs.split(' ').any(|a| a.starts_with(bad) || a.contains(&format!("=\"{bad}"))), "<{tag}> keeps {bad} in {html}");
            }
        }
        // Raw HTML is visible as text, so the reader sees what the agent wrote.
        assert!(html.contains("&lt;script&gt;window.__pwned = 1&lt;/script&gt;"), "{html}");
        // The image became a plain link the user may choose to open.
        assert!(html.contains(r#"<a href="https://tracker.example/p.gif" rel="noopener noreferrer">pixel</a>"#), "{html}");
        // Unsafe links keep their text but lose the target.
        assert!(html.contains(">click</a>") && !html.contains("href=\"javascript"), "{html}");
    }

    #[test]
    fn task_lists_cannot_be_edited() {
        let html = render("- [x] done\n- [ ] todo");
        assert!(html.contains("checked") && html.matches("disabled").count() == 2, "{html}");
    }

    #[test]
    fn huge_reports_are_cut_with_a_note() {
        let huge = "x".repeat(super::MAX_RENDERED + 10);
        let html = render(&huge);
        assert!(html.len() < super::MAX_RENDERED + 400);
        assert!(html.ends_with("the full text is in report.md.</em></p>"));
    }
}
