//! Adding and removing `[[accounts]]` in `nightshift.toml`, keeping the user's comments and layout.

use crate::error::{Error, ErrorCode, Result};
use crate::home::Home;
use crate::words::Agent;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

fn load(home: &Home) -> Result<DocumentMut> {
    let path = home.settings_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io("read", &path, &e)),
    };
    text.parse::<DocumentMut>()
        .map_err(|e| Error::new(ErrorCode::SettingsInvalid, format!("{}: {e}", path.display())))
}

fn save(home: &Home, doc: &DocumentMut) -> Result<()> {
    crate::fsutil::write_atomic(&home.settings_path(), doc.to_string().as_bytes())
}

fn emails(doc: &DocumentMut) -> Vec<(String, String)> {
    doc.get("accounts")
        .and_then(Item::as_array_of_tables)
        .map(|a| {
            a.iter()
                .map(|t| {
                    (
                        t.get("agent").and_then(|v| v.as_str()).unwrap_or("claude").to_string(),
                        t.get("email").and_then(|v| v.as_str()).unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Append an account. Adding one that exists is an error that says so.
pub fn add_account(home: &Home, agent: Agent, email: &str) -> Result<()> {
    if !email.contains('@') || email.chars().any(char::is_whitespace) {
        return Err(Error::new(ErrorCode::Usage, format!("\"{email}\" does not look like an email address (the account's identity)")));
    }
    let mut doc = load(home)?;
    if emails(&doc).iter().any(|(a, e)| a == agent.as_str() && e == email) {
        return Err(Error::new(ErrorCode::Usage, format!("account {email} ({}) already exists", agent.as_str())));
    }
    let mut table = Table::new();
    table.insert("agent", toml_edit::value(agent.as_str()));
    table.insert("email", toml_edit::value(email));
    match doc.get_mut("accounts").and_then(Item::as_array_of_tables_mut) {
        Some(arr) => arr.push(table),
        None => {
            let mut arr = ArrayOfTables::new();
            arr.push(table);
            doc.insert("accounts", Item::ArrayOfTables(arr));
        }
    }
    save(home, &doc)
}

/// Remove an account by email (any agent). Its keychain item is the caller's to delete.
pub fn remove_account(home: &Home, email: &str) -> Result<()> {
    let mut doc = load(home)?;
    let Some(arr) = doc.get_mut("accounts").and_then(Item::as_array_of_tables_mut) else {
        return Err(Error::new(ErrorCode::Usage, format!("no account {email}")));
    };
    let before = arr.len();
    arr.retain(|t| t.get("email").and_then(|v| v.as_str()) != Some(email));
    if arr.len() == before {
        return Err(Error::new(ErrorCode::Usage, format!("no account {email}")));
    }
    save(home, &doc)
}
