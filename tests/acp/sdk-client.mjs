// The official ACP TypeScript SDK's client (@agentclientprotocol/sdk) driving an ACP agent
// through the methods it serves, in three connections to the same agent command: the first
// opens a session and uses it (modes, the model option, a prompt with a tool call the client
// approves, a prompt it cancels once its answer started, the list); the second loads that session (its conversation
// replayed as updates); the third, which reads and writes files for the agent, resumes it and
// prompts again. Every answer went through the
// SDK's own parsing of the protocol's types. What each step saw is printed as one JSON line on
// stdout for the Rust test to judge; a step that throws is recorded with its error.
//
// usage: node sdk-client.mjs CWD -- AGENT_COMMAND [ARGS...]

import { spawn } from 'node:child_process'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'

const args = process.argv.slice(2)
const cwd = args[0]
const agent = args.slice(args.indexOf('--') + 1)

/** Runs `work` on a fresh connection to the agent; answers what it returned and saw. */
async function connection(work) {
  const child = spawn(agent[0], agent.slice(1), { cwd, stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise(resolve => child.on('exit', code => resolve(code)))
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout))
  const seen = { updates: [], permissions: [], files: [] }
  // The editor's buffers: what its reads answer before the disk, and where its writes go.
  const buffers = new Map()
  const app = acp.client({ name: 'dsh-acp-tests' })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      seen.permissions.push(params)
      const allow = params.options.find(option => option.kind === 'allow_once')
      return { outcome: { outcome: 'selected', optionId: allow.optionId } }
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      seen.files.push({ read: params.path })
      if (buffers.has(params.path)) return { content: buffers.get(params.path) }
      const { readFile } = await import('node:fs/promises')
      return { content: await readFile(params.path, 'utf8') }
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      seen.files.push({ write: params.path, content: params.content })
      buffers.set(params.path, params.content)
      return {}
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      seen.updates.push(params.update)
    })
  const result = await app.connectWith(stream, ctx => work(ctx, seen))
  child.stdin.end()
  const code = await exited
  return {
    ...result,
    updates: seen.updates,
    permissions: seen.permissions,
    files: seen.files,
    exitCode: code,
  }
}

/** `promise`'s value, or its error as `{error: {code, message}}`. */
async function settled(promise) {
  try {
    return await promise
  } catch (error) {
    return { error: { code: error.code, message: error.message } }
  }
}

const init = (ctx, clientCapabilities = {}) => ctx.request(acp.methods.agent.initialize, {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities,
})

const first = await connection(async (ctx, seen) => {
  const initialized = await init(ctx)
  const opened = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })
  const { sessionId } = opened
  const mode = await settled(ctx.request(acp.methods.agent.session.setMode, {
    sessionId,
    modeId: 'ask-every-command',
  }))
  const prompted = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: 'Run the check' }],
  })
  const model = await settled(ctx.request(acp.methods.agent.session.setConfigOption, {
    sessionId,
    configId: 'model',
    value: 'deepseek-official/deepseek-v4-pro',
  }))
  // A prompt whose answer stalls after its first words: cancelled once they arrived.
  const waiting = ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: 'Take your time' }],
  })
  const before = seen.updates.length
  const started = () => seen.updates.slice(before)
    .some(update => update.sessionUpdate === 'agent_message_chunk')
  for (let waited = 0; waited < 20_000 && !started(); waited += 20) {
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId })
  const cancelled = await settled(waiting)
  const listed = await ctx.request(acp.methods.agent.session.list, { cwd })
  const unknown = await settled(ctx.request(acp.methods.agent.session.prompt, {
    sessionId: 'no-such-session',
    prompt: [{ type: 'text', text: 'hello?' }],
  }))
  return { initialized, opened, mode, prompted, model, cancelled, listed, unknown }
})

const second = await connection(async (ctx, seen) => {
  await init(ctx)
  const loaded = await ctx.request(acp.methods.agent.session.load, {
    sessionId: first.opened.sessionId,
    cwd,
    mcpServers: [],
  })
  return { loaded, beforeAnswer: seen.updates.length }
})

// The third client keeps the files: in full access, the agent's write lands in its buffer.
const third = await connection(async ctx => {
  await init(ctx, { fs: { readTextFile: true, writeTextFile: true } })
  const sessionId = first.opened.sessionId
  const resumed = await ctx.request(acp.methods.agent.session.resume, { sessionId, cwd })
  // Full access: the session's files are the client's (a sandboxed one keeps the disk).
  await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'danger-full-access' })
  const prompted = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: 'And now?' }],
  })
  return { resumed, prompted }
})

process.stdout.write(JSON.stringify({ first, second, third }) + '\n')
