//! The fake server's model list: `GET .../models` answered as DeepSeek's API answers it (the
//! OpenAI list shape), by default with the two official models, so an adapter that discovers
//! its endpoint's models at start sees nothing new unless a test says otherwise. A test can
//! serve other ids or none (a 404, an endpoint without the route). These requests are kept
//! apart from the chat requests: every test that counts or indexes the model's requests stays
//! as it was.

use std::sync::Mutex;

use serde_json::json;

use super::script::{RecordedRequest, Reply};
use super::server::FakeDeepSeek;

/// The ids DeepSeek's own `/models` lists.
pub const OFFICIAL_MODELS: [&str; 2] = ["deepseek-v4-flash", "deepseek-v4-pro"];

/// What `GET .../models` answers, and the requests that asked.
pub(crate) struct ModelList {
    /// `None`: the route does not exist (404).
    ids: Mutex<Option<Vec<String>>>,
    /// Whether a request without an authorization header is answered 401.
    keyed: Mutex<bool>,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl Default for ModelList {
    fn default() -> Self {
        Self {
            ids: Mutex::new(Some(OFFICIAL_MODELS.map(str::to_owned).to_vec())),
            keyed: Mutex::new(false),
            requests: Mutex::new(Vec::new()),
        }
    }
}

impl ModelList {
    /// Whether `request` asks for the model list.
    pub(crate) fn asks(request: &RecordedRequest) -> bool {
        request.method == "GET" && request.path.ends_with("/models")
    }

    /// Records `request` and answers it.
    pub(crate) fn answer(&self, request: RecordedRequest) -> Reply {
        let anonymous = request.header("authorization").is_none();
        self.requests.lock().unwrap().push(request);
        if anonymous && *self.keyed.lock().unwrap() {
            return Reply::error(401, "authentication_error", "fake DeepSeek: no key given");
        }
        match &*self.ids.lock().unwrap() {
            Some(ids) => {
                let data: Vec<_> = ids
                    .iter()
                    .map(|id| json!({"id": id, "object": "model", "owned_by": "deepseek"}))
                    .collect();
                Reply::Status {
                    status: 200,
                    headers: Vec::new(),
                    body: json!({"object": "list", "data": data}).to_string(),
                }
            }
            None => Reply::error(404, "not_found", "fake DeepSeek: no /models here"),
        }
    }
}

impl FakeDeepSeek {
    /// `GET .../models` lists `ids` from now on (default: [`OFFICIAL_MODELS`]).
    pub fn serve_models(&self, ids: &[&str]) {
        *self.model_list().ids.lock().unwrap() =
            Some(ids.iter().map(|id| (*id).to_owned()).collect());
    }

    /// `GET .../models` without an authorization header answers 401 from now on, as an
    /// endpoint that needs a key does.
    pub fn models_need_a_key(&self) {
        *self.model_list().keyed.lock().unwrap() = true;
    }

    /// `GET .../models` answers 404 from now on, as an endpoint without the route does.
    pub fn without_models(&self) {
        *self.model_list().ids.lock().unwrap() = None;
    }

    /// Every `GET .../models` received so far, in arrival order (never in [`Self::requests`]).
    pub fn model_list_requests(&self) -> Vec<RecordedRequest> {
        self.model_list().requests.lock().unwrap().clone()
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    use serde_json::Value;

    use super::*;

    /// `GET path` on a connection of its own: the status and the body as JSON.
    fn get(server: &FakeDeepSeek, path: &str) -> (u16, Value) {
        let address = server.url().trim_start_matches("http://").to_owned();
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nhost: fake\r\nauthorization: Bearer sk-1\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, serde_json::from_str(body).unwrap())
    }

    fn ids(list: &Value) -> Vec<&str> {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|model| model["id"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn lists_the_official_models_unless_told_otherwise_and_apart_from_chat_requests() {
        let server = FakeDeepSeek::start(Vec::new());
        let (status, list) = get(&server, "/models");
        assert_eq!(status, 200);
        assert_eq!(list["object"], "list");
        assert_eq!(ids(&list), OFFICIAL_MODELS);
        server.serve_models(&["qwen2.5-coder:7b"]);
        assert_eq!(ids(&get(&server, "/v1/models").1), ["qwen2.5-coder:7b"]);
        server.without_models();
        let (status, refusal) = get(&server, "/models");
        assert_eq!(status, 404, "{refusal}");
        let asked = server.model_list_requests();
        assert_eq!(asked.len(), 3);
        assert_eq!(asked[0].header("authorization"), Some("Bearer sk-1"));
        assert!(server.requests().is_empty(), "not a chat request");
        assert_eq!(server.remaining(), 0);
    }
}
