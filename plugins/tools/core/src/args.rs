//! From the model's raw argument string to validated arguments.

use serde_json::{Map, Value};

use crate::failure::ToolFailure;
use crate::schema::Schema;
use crate::schema_value::validate_value;

/// Parse the raw argument string as the reference's loop does: the empty string means `{}`
/// (some models send nothing for a parameterless tool), and text that is not JSON is kept as a
/// JSON string rather than failing here. Keeping it means the failure surfaces where every
/// other argument problem does, as `INVALID_ARGS` from validation (`"arguments" must be an
/// object`), after the call was logged and policy saw it.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Validate parsed arguments against a checked parameter schema. The failure message lists
/// every violation with its path: `invalid arguments: missing required property "path"; "limit"
/// must be a number`.
pub fn validate_arguments(schema: &Schema, arguments: &Value) -> Result<(), ToolFailure> {
    let violations = validate_value(schema, arguments, "");
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ToolFailure::invalid_args(&violations))
    }
}

/// [`parse_arguments`] then [`validate_arguments`]: the parsed arguments, or the
/// `INVALID_ARGS` failure the model will read.
pub fn parse_and_validate_arguments(schema: &Schema, raw: &str) -> Result<Value, ToolFailure> {
    let arguments = parse_arguments(raw);
    validate_arguments(schema, &arguments)?;
    Ok(arguments)
}
