// The globals of a Code Mode program: `tools` (one async function per tool the calling agent
// can see), `console` and `ToolCallError`. The host's hooks (`__dsh_*`) are taken out of the
// global object first, so the program cannot call them.
(() => {
  const request = globalThis.__dsh_request;
  const log = globalThis.__dsh_log;
  const finish = globalThis.__dsh_finish;
  const names = JSON.parse(globalThis.__dsh_names);
  delete globalThis.__dsh_request;
  delete globalThis.__dsh_log;
  delete globalThis.__dsh_finish;
  delete globalThis.__dsh_names;

  // A tool call that failed (refused by policy, bad arguments, the tool's own error).
  class ToolCallError extends Error {
    constructor(toolName, message) {
      super(message);
      this.name = 'ToolCallError';
      this.toolName = toolName;
    }
  }
  globalThis.ToolCallError = ToolCallError;

  const pending = new Map();
  const bind = (name) => (args) => {
    if (args === undefined) args = {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      return Promise.reject(new TypeError(
        `tools.${name}: call it with one arguments object, e.g. tools.${name}({ ... })`));
    }
    let json;
    try {
      json = JSON.stringify(args);
    } catch (error) {
      return Promise.reject(new TypeError(`tools.${name}: the arguments are not JSON: ${error.message}`));
    }
    return new Promise((resolve, reject) => {
      const id = request(name, json);
      if (id === 0) {
        reject(new RangeError(`tools.${name}: more than 1000 tool calls are waiting; await some first`));
        return;
      }
      pending.set(id, { name, resolve, reject });
    });
  };
  const bindings = Object.create(null);
  for (const name of names) bindings[name] = bind(name);
  globalThis.tools = new Proxy(bindings, {
    get(target, name) {
      // Not a tool: what `await tools` and JSON ask for.
      if (typeof name !== 'string' || name === 'then' || name === 'toJSON') return undefined;
      if (Object.prototype.hasOwnProperty.call(target, name)) return target[name];
      throw new ReferenceError(`tools.${name}: there is no tool \`${name}\`; the tools are: ${names.join(', ')}`);
    },
  });

  globalThis.__dsh_settle = (id, ok, payload) => {
    const entry = pending.get(id);
    if (entry === undefined) return;
    pending.delete(id);
    if (ok) entry.resolve(JSON.parse(payload));
    else entry.reject(new ToolCallError(entry.name, `tools.${entry.name}: ${payload}`));
  };

  const show = (value) => {
    if (typeof value === 'string') return value;
    if (value instanceof Error) return String(value);
    try {
      const json = JSON.stringify(value);
      return json === undefined ? String(value) : json;
    } catch {
      return String(value);
    }
  };
  const write = (...args) => log(args.map(show).join(' '));
  globalThis.console = { log: write, info: write, warn: write, error: write, debug: write };

  const render = (value) => {
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value;
    try {
      const json = JSON.stringify(value, null, 2);
      return json === undefined ? String(value) : json;
    } catch {
      return String(value);
    }
  };
  const describe = (error) => {
    if (error instanceof Error) {
      const stack = typeof error.stack === 'string' && error.stack.trim() !== '' ? `\n${error.stack.trimEnd()}` : '';
      return `${error.name}: ${error.message}${stack}`;
    }
    return `a thrown value: ${show(error)}`;
  };
  globalThis.__dsh_run = (main) => {
    delete globalThis.__dsh_run;
    main().then((value) => finish(true, render(value)), (error) => finish(false, describe(error)));
  };
})();
