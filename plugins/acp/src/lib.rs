//! Plugin `acp` (being built): the Agent Client Protocol agent for editors, over stdio.
