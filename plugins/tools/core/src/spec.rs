//! What a tool declares: the model-facing schema and the registry-only metadata beside it.

use std::fmt;
use std::sync::{Arc, OnceLock};

use dsh_protocol::ToolSchema;
use serde_json::Value;

use crate::args::validate_arguments;
use crate::failure::ToolFailure;
use crate::scheduler::Concurrency;
use crate::schema::Schema;
use crate::schema_check::{SchemaError, check_object_schema};

/// A per-call concurrency classifier over the parsed arguments. It must be pure and total; it is
/// only consulted for arguments that already passed the parameter schema.
pub type ConcurrencyClassifier = Arc<dyn Fn(&Value) -> Concurrency + Send + Sync>;

/// How a tool's calls may overlap with sibling calls of the same step.
#[derive(Clone, Default)]
pub enum ConcurrencyClass {
    /// Every call runs alone, as a barrier. The default: overlap is opt-in because an
    /// exclusive tool wrongly run in parallel corrupts state, while the reverse only costs time.
    #[default]
    Exclusive,
    /// Every call may overlap.
    Parallel,
    /// Decided per call from its arguments (e.g. a read-only subcommand may overlap).
    PerCall(ConcurrencyClassifier),
}

impl fmt::Debug for ConcurrencyClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exclusive => f.write_str("Exclusive"),
            Self::Parallel => f.write_str("Parallel"),
            Self::PerCall(_) => f.write_str("PerCall(..)"),
        }
    }
}

/// A tool's declaration. Only `name`, `description` and `parameters` ever reach a model request
/// ([`ToolSpec::schema`]); the rest is registry metadata.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    name: String,
    description: String,
    parameters: Value,
    /// `parameters` read into a [`Schema`], once (at registration), for every call after.
    checked: OnceLock<Result<Schema, SchemaError>>,
    enforced: bool,
    concurrency: ConcurrencyClass,
    timeout_ms: Option<u64>,
    guidance: Option<Guidance>,
}

/// How to use a tool well, as a system-prompt section (order 100-199 by convention). It is
/// part of the prompt only where the tool is visible, so a filtered tool stays unmentioned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guidance {
    pub order: i64,
    pub text: String,
}

impl ToolSpec {
    /// A tool whose parameter schema the registry enforces. Registration refuses the tool unless
    /// `parameters` is an object schema within the enforced subset.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            checked: OnceLock::new(),
            enforced: true,
            concurrency: ConcurrencyClass::Exclusive,
            timeout_ms: None,
            guidance: None,
        }
    }

    /// A tool whose schema is forwarded to the model verbatim and never enforced, for bridges
    /// whose schemas come from elsewhere (an MCP server's raw JSON Schema may use any keyword).
    /// Such a tool validates its own arguments.
    pub fn passthrough(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> Self {
        Self {
            enforced: false,
            ..Self::new(name, description, parameters)
        }
    }

    pub fn with_concurrency(mut self, concurrency: ConcurrencyClass) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Every call of this tool may overlap with other parallel-safe calls.
    pub fn parallel_safe(self) -> Self {
        self.with_concurrency(ConcurrencyClass::Parallel)
    }

    /// The cooperative deadline a timeout policy enforces. Never sent to the model.
    pub fn with_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeout_ms = Some(timeout_ms);
        self
    }

    /// The tool's system-prompt guidance.
    pub fn with_guidance(mut self, order: i64, text: impl Into<String>) -> Self {
        self.guidance = Some(Guidance {
            order,
            text: text.into(),
        });
        self
    }

    pub fn guidance(&self) -> Option<&Guidance> {
        self.guidance.as_ref()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn description(&self) -> &str {
        &self.description
    }

    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// The parameter schema read once and kept: what registration checks (and refuses the tool
    /// on) and what every call's arguments are validated against.
    pub fn checked_parameters(&self) -> Result<&Schema, &SchemaError> {
        self.checked
            .get_or_init(|| check_object_schema(&self.parameters))
            .as_ref()
    }

    /// Whether the registry enforces the parameter schema.
    pub fn is_enforced(&self) -> bool {
        self.enforced
    }

    pub fn concurrency_class(&self) -> &ConcurrencyClass {
        &self.concurrency
    }

    pub fn timeout_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    /// The model-facing projection: an allowlist of three fields, built fresh, so no registry
    /// metadata can leak into a request by accident.
    pub fn schema(&self) -> ToolSchema {
        ToolSchema::new(&self.name, &self.description, &self.parameters)
    }

    /// Validate parsed arguments against the enforced schema; always `Ok` for a passthrough tool.
    /// A schema outside the subset (never registered) fails every call with its violations.
    pub fn validate_arguments(&self, arguments: &Value) -> Result<(), ToolFailure> {
        if !self.enforced {
            return Ok(());
        }
        match self.checked_parameters() {
            Ok(schema) => validate_arguments(schema, arguments),
            // Only a spec the registry refused gets here: no argument can satisfy its schema.
            Err(error) => Err(ToolFailure::invalid_args(&error.violations)),
        }
    }

    /// How one call may be scheduled. Fail-closed like the reference's `executionMode`:
    /// arguments the schema refuses make the call exclusive without asking the classifier.
    pub fn concurrency_for(&self, arguments: &Value) -> Concurrency {
        match &self.concurrency {
            ConcurrencyClass::Exclusive => Concurrency::Exclusive,
            _ if self.validate_arguments(arguments).is_err() => Concurrency::Exclusive,
            ConcurrencyClass::Parallel => Concurrency::Parallel,
            ConcurrencyClass::PerCall(classify) => classify(arguments),
        }
    }
}
