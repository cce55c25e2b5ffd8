//! The hash maps of the host's hot paths (service look-ups on every `ctx.get`, bus slots on
//! every emit, fibers' dependents, loaded libraries on every mount): std's maps with foldhash
//! instead of SipHash. SipHash guards against keys chosen to collide; these keys are service,
//! event and row names the host and its plugins choose, and SipHash was a tenth of mounting
//! 100 rows.

/// A `HashMap` hashed with foldhash.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` hashed with foldhash.
pub type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
