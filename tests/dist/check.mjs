// In the consumer container: import { … } from 'plimsoll' (the exports map's
// ES module entry) is the same package.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import plimsoll, { Engine, Client, PlimsollError, UnauthenticatedError } from 'plimsoll'

assert.equal(Engine, createRequire(import.meta.url)('plimsoll').Engine)
const engine = await Engine.start({ SANDBOX_PROVIDER: 'wasm' })
const r = await engine.runJavaScript('console.log(6*7)')
assert.equal(r.stdout.toString(), '42\n')
await engine.close()
const stranger = new Client(process.env.PLIMSOLL_URL, { token: 'x'.repeat(40) })
await assert.rejects(stranger.runJavaScript('1'), (e) => e instanceof UnauthenticatedError && e instanceof PlimsollError)
console.log(`node (import) embedded: 42; remote with a wrong token: UnauthenticatedError; ${plimsoll.version()}`)
