//! `GET /export?session=ID`: the session's archive as a download (the page's "Export" in a
//! session's menu is a link to it). Signed in like the page itself; the archive is built by the
//! store's `session_archive` service (which flushes the session first) and sent whole, named
//! `dsh-session-<id>.tar.zst`.

use dsh_plugin_api::Context;
use dsh_plugin_api::io::http_server::{ServerRequest, ServerResponse};
use dsh_sessions_seam::{SESSION_ARCHIVE_SERVICE, SessionArchiveService, SessionErrorKind};

use crate::guard::query_value;

fn text(status: u16, message: String) -> ServerResponse {
    ServerResponse::new(status, "text/plain; charset=utf-8", message)
}

pub(crate) async fn download(ctx: &Context, request: &ServerRequest) -> ServerResponse {
    let Some(session) = query_value(request.query(), "session").filter(|id| !id.is_empty()) else {
        return text(400, "which session: /export?session=ID".to_owned());
    };
    let Ok(Some(archive)) = ctx.get::<SessionArchiveService>(SESSION_ARCHIVE_SERVICE) else {
        return text(
            503,
            "no `session_archive` service is running (the session store provides it)".to_owned(),
        );
    };
    match archive.export(session.as_str().into()).await.into_result() {
        Ok(exported) => {
            let name = exported
                .report
                .decode()
                .map(|report| report.file_name)
                .unwrap_or_else(|_| "dsh-session.tar.zst".to_owned());
            ServerResponse::new(200, "application/zstd", exported.bytes.into_vec()).with_header(
                "content-disposition",
                &format!("attachment; filename=\"{name}\""),
            )
        }
        Err(error) => {
            let status = match error.kind {
                SessionErrorKind::NotFound => 404,
                SessionErrorKind::Invalid => 400,
                _ => 500,
            };
            text(status, format!("export failed: {error}"))
        }
    }
}
