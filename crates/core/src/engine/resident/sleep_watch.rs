//! The machine going to sleep and waking, as logind says it (`PrepareForSleep(true)` just before a
//! suspend, `PrepareForSleep(false)` after the resume, on `org.freedesktop.login1.Manager`): the
//! scheduler ends its stretch of presence `asleep` at the moment the machine goes, not at its last
//! pass (which may be minutes earlier now that it wakes only when something is due), and makes a
//! pass at once on waking (the slots the night held are caught up then).
//!
//! logind is heard over D-Bus by a task on the engine's tokio runtime (zbus on its tokio
//! backend): its socket is one more descriptor the runtime waits on. Not a thread of zbus's own
//! (`async-io`'s pool, whose idle threads look for work every 500 ms for as long as the process
//! lives — two wake-ups a second at rest). No logind (a container, another platform): said once
//! at debug level, and the scheduler tells sleep from the wall clock running ahead of the
//! monotonic one at its next pass, as before.

/// What logind said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sleep {
    /// The machine is about to suspend.
    Going,
    /// It has resumed.
    Back,
}

/// Hear logind's `PrepareForSleep` on `bus` (`None`: the system bus) for as long as the receiver
/// lives (the task ends at the first signal after it is dropped). Call inside a tokio runtime.
pub(crate) fn watch(bus: Option<String>) -> tokio::sync::mpsc::Receiver<Sleep> {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    #[cfg(target_os = "linux")]
    tokio::spawn(async move {
        if let Err(e) = listen(bus.as_deref(), &tx).await {
            tracing::debug!(error = %e, "not hearing logind's sleep and wake (the scheduler tells a sleep from the clocks instead)");
        }
    });
    #[cfg(not(target_os = "linux"))]
    let _ = (bus, tx);
    rx
}

#[cfg(target_os = "linux")]
async fn listen(bus: Option<&str>, tx: &tokio::sync::mpsc::Sender<Sleep>) -> Result<(), String> {
    use futures_util::StreamExt;
    let builder = match bus {
        Some(address) => zbus::connection::Builder::address(address),
        None => zbus::connection::Builder::system(),
    };
    let conn = match builder {
        Ok(b) => b.build().await,
        Err(e) => Err(e),
    }
    .map_err(|e| format!("no connection to logind's bus: {e}"))?;
    let proxy = zbus::proxy::Builder::<zbus::Proxy<'_>>::new(&conn)
        .destination("org.freedesktop.login1")
        .and_then(|b| b.path("/org/freedesktop/login1"))
        .and_then(|b| b.interface("org.freedesktop.login1.Manager"))
        .map(|b| b.cache_properties(zbus::proxy::CacheProperties::No))
        .map_err(|e| format!("no logind: {e}"))?
        .build()
        .await
        .map_err(|e| format!("no logind: {e}"))?;
    let mut signals = proxy.receive_signal("PrepareForSleep").await.map_err(|e| format!("logind's PrepareForSleep cannot be heard: {e}"))?;
    while let Some(message) = signals.next().await {
        let Ok(going) = message.body().deserialize::<bool>() else { continue };
        let said = if going { Sleep::Going } else { Sleep::Back };
        tracing::info!(?said, "logind: the machine {}", if going { "is going to sleep" } else { "woke" });
        if tx.send(said).await.is_err() {
            return Ok(()); // the scheduler is gone
        }
    }
    Ok(())
}
