//! The protocol's JSON Schema, in one document: every method with the schema of its params and
//! its result, the frames both ways, the error codes, the version and the features. What
//! `dsh-host schema` prints and what a client in another language generates its types from.

use schemars::generate::SchemaSettings;

use crate::*;

/// The document: `methods` (name → params, result), `frames`, `errorCodes`, and `$defs`.
pub fn schema_document() -> serde_json::Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let methods: serde_json::Map<String, serde_json::Value> =
        crate::request::method_schemas(&mut generator)
            .into_iter()
            .map(|(name, params, result)| {
                (
                    name.to_owned(),
                    serde_json::json!({ "params": params, "result": result }),
                )
            })
            .collect();
    let server_frame = generator.subschema_for::<ServerFrame>();
    let client_frame = generator.subschema_for::<ClientFrame>();
    let request = generator.subschema_for::<ClientRequest>();
    let envelope = generator.subschema_for::<RpcRequest>();
    let response = generator.subschema_for::<RpcResponse>();
    let codes = generator.subschema_for::<RpcErrorCode>();
    let definitions = generator.take_definitions(true);
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dsh client protocol",
        "protocolVersion": PROTOCOL_VERSION,
        "features": HOST_FEATURES,
        "request": request,
        "methods": methods,
        "frames": { "server": server_frame, "client": client_frame },
        "errorCodes": codes,
        "http": { "request": envelope, "response": response },
        "$defs": definitions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_has_its_params_and_result_and_every_ref_resolves() {
        let document = schema_document();
        let methods = document["methods"].as_object().unwrap();
        assert_eq!(methods.len(), METHODS.len());
        assert!(methods["session.prompt"]["params"]["$ref"].is_string());
        let defs = document["$defs"].as_object().unwrap();
        let text = document.to_string();
        for reference in text.split("\"$ref\":\"#/$defs/").skip(1) {
            let name = reference.split('"').next().unwrap();
            assert!(defs.contains_key(name), "{name} is referenced, not defined");
        }
        assert!(defs.contains_key("ServerFrame") && defs.contains_key("ChatItem"));
    }
}
