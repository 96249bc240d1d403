// Test helpers: a real plimsolld for the remote client, and the shared vectors.
//
// The daemon binary comes from PLIMSOLLD (default: target/debug/plimsolld under
// the repository root; build it with `cargo build -p plimsolld`).

import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const PLIMSOLLD = process.env.PLIMSOLLD ?? join(ROOT, 'target', 'debug', 'plimsolld')

export const TOKEN_ALICE = 'alice-' + 'a'.repeat(40)
export const TOKEN_BOB = 'bob-' + 'b'.repeat(40)

// No rate limit, so a suite's many runs are never shed by the default 30/min.
export const WASM = { SANDBOX_PROVIDER: 'wasm', SANDBOX_RATE_PER_MIN: '0' }

/** Starts plimsolld with `env`; resolves to { url, log(), stop() }. */
export async function startDaemon(env = {}) {
  if (!existsSync(PLIMSOLLD)) throw new Error(`plimsolld not found at ${PLIMSOLLD}; run cargo build -p plimsolld`)
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SANDBOX_') && !k.startsWith('PLIMSOLL_')))
  const child = spawn(PLIMSOLLD, [], {
    env: { ...base, PLIMSOLL_ADDR: '127.0.0.1:0', PLIMSOLL_METRICS_ADDR: 'off', PLIMSOLL_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const lines = []
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error('plimsolld did not start:\n' + lines.join('\n'))), 120_000)
    createInterface({ input: child.stderr }).on('line', (line) => {
      lines.push(line)
      try {
        const ev = JSON.parse(line)
        if (ev.message === 'listening') {
          clearTimeout(timer)
          resolveUrl('http://' + ev.addr)
        }
      } catch {}
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`plimsolld exited (${code}):\n` + lines.join('\n')))
    })
  })
  return {
    url,
    log: () => lines.join('\n'),
    stop: () =>
      new Promise((done) => {
        if (child.exitCode !== null) return done()
        child.once('exit', () => done())
        child.kill('SIGTERM')
      }),
  }
}

/** A clients file: alice may run code, bob may only read metrics. */
export function clientsFile() {
  const sha = (t) => createHash('sha256').update(t).digest('hex')
  const dir = mkdtempSync(join(tmpdir(), 'plimsoll-node-'))
  const path = join(dir, 'clients.json')
  writeFileSync(
    path,
    JSON.stringify({
      clients: [
        { id: 'alice', token_sha256: sha(TOKEN_ALICE), scopes: ['code:run'] },
        { id: 'bob', token_sha256: sha(TOKEN_BOB), scopes: ['metrics:read'] },
      ],
    }),
  )
  return path
}

/** The shared verification vectors (tests/vectors/verify.json). */
export function vectors() {
  return JSON.parse(readFileSync(join(ROOT, 'tests', 'vectors', 'verify.json'), 'utf8'))
}

/** Asserts `err` is a plimsoll error with `code`. */
export function isCode(code) {
  return (err) => {
    if (!(err instanceof Error) || err.code !== code) throw new Error(`expected ${code}, got ${err?.name} ${err?.code}: ${err?.message}`)
    return true
  }
}
