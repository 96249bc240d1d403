// The remote client against a real plimsolld on the wasm provider: answers
// verified by the core's client, refusals typed, AbortSignal cancelling a run.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import plimsoll from '../index.js'
import { isCode, startDaemon, WASM } from './helpers.mjs'

let daemon
before(async () => {
  daemon = await startDaemon({ ...WASM, PLIMSOLL_INSECURE: '1', SANDBOX_MAX_CONCURRENT: '1' })
})
after(() => daemon.stop())

test('describe and a verified run', async () => {
  const c = new plimsoll.Client(daemon.url)
  const d = JSON.parse(await c.describe())
  assert.deepEqual([d.sandbox, d.isolation], ['wasm', 'process'])
  const r = await c.runJavaScript('console.log(6*7)', { minimumIsolation: 'process', traceId: 't-1' })
  assert.equal(r.stdout.toString(), '42\n')
  assert.deepEqual([r.exitCode, r.isolation, r.sandbox], [0, 'process', 'wasm'])
  assert.equal(plimsoll.verifyRun(r.requestJson, r.responseJson).recordSha256, r.record.recordSha256)
})

test('refusals are typed and marked', async () => {
  const c = new plimsoll.Client(daemon.url)
  await assert.rejects(c.runJavaScript('1', { minimumIsolation: 'container' }), (e) => isCode('insufficient_isolation')(e) && e.notDispatched === 'isolation')
  await assert.rejects(c.runProject({ steps: ['true'] }), isCode('unsupported'))
  await assert.rejects(c.openSession(), isCode('unsupported'))
  await assert.rejects(c.runJavaScript('1', { timeoutMs: -1 }), isCode('invalid_request'))
})

test('aborting the signal cancels a remote run and frees its slot', async () => {
  const c = new plimsoll.Client(daemon.url)
  const t0 = Date.now()
  await assert.rejects(c.runJavaScript('while (true) {}', { timeoutMs: 30_000, signal: AbortSignal.timeout(300) }), (e) => e.name === 'AbortError')
  assert.ok(Date.now() - t0 < 3000)
  const deadline = Date.now() + 5000
  for (;;) {
    try {
      assert.equal((await c.runJavaScript('console.log(3)')).stdout.toString(), '3\n')
      break
    } catch (e) {
      if (e.code !== 'at_capacity' || Date.now() > deadline) throw e
      await new Promise((done) => setTimeout(done, 50))
    }
  }
})
