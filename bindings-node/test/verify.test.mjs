// Record and chain verification through the binding (core's verify module):
// the shared vectors replayed, and tampering rejected.

import assert from 'node:assert/strict'
import { test } from 'node:test'

import plimsoll from '../index.js'
import { isCode, vectors } from './helpers.mjs'

const json = (v) => JSON.stringify(v)

test('the shared single-run vectors verify or fail with their code', () => {
  for (const c of vectors().single) {
    if (c.expect === 'ok') {
      const rec = plimsoll.verifyRun(json(c.request), json(c.response))
      assert.equal(rec.version, 4)
      assert.equal(rec.recordSha256, c.response.record.recordSha256)
    } else {
      assert.throws(() => plimsoll.verifyRun(json(c.request), json(c.response)), (err) => isCode(c.expect)(err) && err.notDispatched === null, c.name)
    }
  }
})

test('the shared unreadable vectors fail with their code', () => {
  for (const c of vectors().unreadable) {
    assert.throws(() => plimsoll.verifyRun(c.requestText, c.responseText), isCode(c.expect), c.name)
  }
})

test('tampering with a consistent answer is rejected', () => {
  const good = vectors().single.find((c) => c.name === 'consistent')
  const tampers = [
    (q, r) => (r.javascript.exitCode = 1),
    (q, r) => (r.javascript.timedOut = true),
    (q, r) => (r.sandbox = 'docker'),
    (q, r) => (r.instance = 'plimsoll:other'),
    (q, r) => (r.softwareIdentity = 'quickjs-ng:other'),
    (q, r) => (r.record.endedUnixMs = '1700000000004'),
    (q, r) => (r.record.version = 3),
    (q, r) => (r.record.sequence = '1'),
    (q, r) => delete r.javascript,
    (q, r) => (q.timeoutMs = 5),
  ]
  for (const tamper of tampers) {
    const q = structuredClone(good.request)
    const r = structuredClone(good.response)
    tamper(q, r)
    assert.throws(() => plimsoll.verifyRun(json(q), json(r)), isCode('record_mismatch'), tamper.toString())
  }
  assert.throws(() => plimsoll.verifyRun(json(good.request), '{'), isCode('transport'))
  assert.throws(() => plimsoll.verifyRun('[]', '{}'), isCode('invalid_request'))
})

test('a chain verifies in order; a broken one is rejected and does not advance', () => {
  const { chain: v } = vectors()
  const chain = new plimsoll.Chain(v.fingerprint)
  assert.throws(() => chain.checkCall(json(v.calls[1].request), json(v.calls[1].response)), isCode('record_mismatch'))
  assert.equal(chain.calls, 0)
  v.calls.forEach((c, i) => assert.equal(chain.checkCall(json(c.request), json(c.response)).sequence, i + 1))
  assert.equal(chain.calls, 3)
  assert.equal(chain.last, v.last)
  chain.checkClose(v.fingerprint, 3, v.last)
  assert.throws(() => chain.checkClose(v.fingerprint, 2, v.last), isCode('record_mismatch'))
  assert.throws(() => chain.checkCall(json(v.calls[0].request), json(v.calls[0].response)), isCode('record_mismatch'))
  assert.throws(() => plimsoll.verifyRun(json(v.calls[0].request), json(v.calls[0].response)), isCode('record_mismatch'))
})
