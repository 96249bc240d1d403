// One error name per ErrorCode; err.code is the stable code name, err.notDispatched
// the reason nothing ran (null when the call may have run). Each raised for real
// where this machine can.

import assert from 'node:assert/strict'
import { test } from 'node:test'

import plimsoll from '../index.js'
import { clientsFile, isCode, startDaemon, TOKEN_ALICE, TOKEN_BOB } from './helpers.mjs'

const REASONS = {
  invalid_request: 'request',
  protocol_missing: 'protocol',
  protocol_mismatch: 'protocol',
  unauthenticated: 'permission',
  permission_denied: 'permission',
  disabled: 'unsupported',
  unsupported: 'unsupported',
  insufficient_isolation: 'isolation',
  software_mismatch: 'environment',
  at_capacity: 'capacity',
  session_ended: 'request',
  infrastructure: null,
  cancelled: null,
  deadline_exceeded: null,
  record_mismatch: null,
  isolation_evidence_mismatch: null,
  transport: null,
}

test('every code has its own error name and fields', () => {
  const codes = plimsoll.errorCodes()
  assert.deepEqual(codes.map((c) => c.number), codes.map((_, i) => i + 1))
  assert.deepEqual(new Set(codes.map((c) => c.name)), new Set(Object.keys(REASONS)))
  const names = new Set(codes.map((c) => c.errorName))
  assert.equal(names.size, codes.length)
  assert.ok(!names.has('PlimsollError'))
  for (const c of codes) {
    assert.equal(c.notDispatched ?? null, REASONS[c.name], c.name)
    const err = plimsoll.errorForCode(c.name, 'm')
    assert.ok(err instanceof Error)
    assert.equal(err.code, c.name)
    assert.equal(err.codeNumber, c.number)
    assert.equal(err.name, c.errorName)
    assert.equal(err.notDispatched, REASONS[c.name])
    assert.equal(err.message, 'm')
    assert.equal(err.sessionEnd, null)
  }
  assert.equal(plimsoll.errorForCode('cancelled', 'x').name, 'AbortError')
})

test('the disabled engine refuses every run, not dispatched', async () => {
  const e = await plimsoll.Engine.start()
  assert.equal(JSON.parse(await e.describe()).isolation, 'none')
  for (const run of [() => e.runJavaScript('console.log(1)'), () => e.runProject({ files: { 'a.js': '1' }, steps: ['node a.js'] })]) {
    await assert.rejects(run(), (err) => {
      isCode('disabled')(err)
      assert.equal(err.name, 'DisabledError')
      assert.equal(err.notDispatched, 'unsupported')
      return true
    })
  }
  await assert.rejects(e.openSession(), (err) => err.notDispatched !== null)
})

test('invalid and protocol refusals', async () => {
  const e = await plimsoll.Engine.start()
  await assert.rejects(e.runJavaScript('1', { minimumIsolation: 'none' }), (err) => isCode('invalid_request')(err) && err.notDispatched === 'request')
  await assert.rejects(e.runJavaScript('x'.repeat(256 * 1024 + 1)), isCode('invalid_request'))
  await assert.rejects(e.runJson('{not json'), isCode('invalid_request'))
  await assert.rejects(e.runJson(JSON.stringify({ javascript: { code: '1' } })), (err) => isCode('protocol_missing')(err) && err.notDispatched === 'protocol')
  await assert.rejects(e.runJson(JSON.stringify({ protocol: plimsoll.PROTOCOL + 1, javascript: { code: '1' } })), isCode('protocol_mismatch'))
})

test('configuration errors name the variable', async () => {
  await assert.rejects(plimsoll.Engine.start({ SANDBOX_PROVIDER: 'magic' }), (err) => err.code === 'config' && err.variable === 'SANDBOX_PROVIDER')
  await assert.rejects(plimsoll.Engine.start({ SANDBOX_PROVDER: 'wasm' }), (err) => err.code === 'config' && err.message.includes('SANDBOX_PROVDER'))
  await assert.rejects(plimsoll.Engine.start({ PLIMSOLL_ADDR: '127.0.0.1:0' }), (err) => err.message.includes('PLIMSOLL_ADDR'))
  await assert.rejects(plimsoll.Engine.start({ SANDBOX_MIN_ISOLATION: 'process' }), (err) => err.variable === 'SANDBOX_MIN_ISOLATION')
})

test('refusals from a real plimsolld arrive typed and marked', async (t) => {
  const d = await startDaemon({ PLIMSOLL_CLIENTS_FILE: clientsFile() })
  t.after(() => d.stop())
  assert.equal(JSON.parse(await new plimsoll.Client(d.url, { token: TOKEN_ALICE }).describe()).sandbox, 'disabled')
  for (const token of [undefined, 'wrong-' + 'x'.repeat(40)]) {
    await assert.rejects(new plimsoll.Client(d.url, { token }).runJavaScript('1'), (err) => isCode('unauthenticated')(err) && err.notDispatched === 'permission')
  }
  await assert.rejects(new plimsoll.Client(d.url, { token: TOKEN_BOB }).describe(), isCode('permission_denied'))
  const alice = new plimsoll.Client(d.url, { token: TOKEN_ALICE })
  await assert.rejects(alice.runJavaScript('1'), (err) => isCode('disabled')(err) && err.notDispatched === 'unsupported')
  await assert.rejects(alice.runJavaScript('1', { minimumIsolation: 'vm' }), isCode('insufficient_isolation'))
  assert.ok(!d.log().includes(TOKEN_ALICE) && !d.log().includes(TOKEN_BOB))
})

test('client options are checked', () => {
  assert.throws(() => new plimsoll.Client('http://example.com'), isCode('invalid_request'))
  new plimsoll.Client('http://example.com', { insecureHttp: true })
  assert.throws(() => new plimsoll.Client('https://u:p@example.com'), isCode('invalid_request'))
  assert.throws(() => new plimsoll.Client('http://127.0.0.1:1', { token: 'has space' }), isCode('invalid_request'))
})

test('a transport error when nothing answers; an aborted signal is an AbortError', async () => {
  const c = new plimsoll.Client('http://127.0.0.1:9', { timeoutMs: 5000 })
  await assert.rejects(c.runJavaScript('1'), (err) => isCode('transport')(err) && err.notDispatched === null)
  const ac = new AbortController()
  ac.abort()
  await assert.rejects(c.runJavaScript('1', { signal: ac.signal }), (err) => err.name === 'AbortError' && err.code === 'cancelled')
})
