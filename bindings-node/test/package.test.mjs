// The package as a user loads it: `require('plimsoll')` and `import … from
// 'plimsoll'` (resolved through package.json's exports map, as from a
// dependent), the error classes, and the error a missing platform package
// gives.

import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import * as esm from 'plimsoll'
import esmDefault from 'plimsoll'
import { WASM } from './helpers.mjs'

const require = createRequire(import.meta.url)
const types = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
const cjs = require('plimsoll')

test('require and import give the same objects', () => {
  for (const name of ['Engine', 'Client', 'Session', 'Chain', 'verifyRun', 'errorCodes', 'PlimsollError', 'ConfigError', 'AbortError']) {
    assert.equal(typeof cjs[name], 'function', name)
    assert.equal(esm[name], cjs[name], name)
    assert.equal(esmDefault[name], cjs[name], name)
  }
  assert.equal(esm.PROTOCOL, cjs.PROTOCOL)
  assert.equal(cjs.version(), require('plimsoll/package.json').version)
})

test('one exported class per code, each a PlimsollError', () => {
  const codes = cjs.errorCodes()
  assert.equal(codes.length, 17)
  for (const c of codes) {
    const cls = cjs[c.errorName]
    assert.equal(typeof cls, 'function', c.errorName)
    assert.equal(cls.name, c.errorName)
    assert.equal(esm[c.errorName], cls, `${c.errorName} is a named ES export`)
    const err = cjs.errorForCode(c.name, 'm')
    assert.ok(err instanceof cls, c.name)
    assert.ok(err instanceof cjs.PlimsollError, c.name)
    assert.ok(err instanceof Error, c.name)
    assert.equal(err.code, c.name)
    assert.equal(err.name, c.errorName)
    assert.ok(typeof err.stack === 'string')
    for (const other of codes) if (other !== c) assert.ok(!(err instanceof cjs[other.errorName]), `${c.name} is not ${other.name}`)
    assert.ok(
      types.includes(`export declare class ${c.errorName} extends PlimsollError {\n  readonly code: '${c.name}'\n}`),
      `index.d.ts declares ${c.errorName} with code '${c.name}'`,
    )
  }
})

test('errors thrown and rejected for real carry their class', async () => {
  await assert.rejects(cjs.Engine.start({ SANDBOX_BOGUS: '1' }), (e) => e instanceof cjs.ConfigError && e.variable === 'environment' && e.code === 'config' && !(e instanceof cjs.PlimsollError))
  const engine = await esm.Engine.start(WASM)
  try {
    await assert.rejects(engine.runJavaScript('1', { minimumIsolation: 'kernel' }), (e) => {
      assert.ok(e instanceof esm.InsufficientIsolationError)
      assert.ok(e instanceof esm.PlimsollError)
      assert.equal(e.notDispatched, 'isolation')
      return true
    })
    const ac = new AbortController()
    const run = engine.runJavaScript('for(;;){}', { signal: ac.signal })
    setTimeout(() => ac.abort(), 100)
    await assert.rejects(run, (e) => e instanceof cjs.AbortError && e.name === 'AbortError' && e.code === 'cancelled')
    const ok = await engine.runJavaScript('console.log(6*7)')
    assert.equal(ok.stdout.toString(), '42\n')
  } finally {
    await engine.close()
  }
  assert.throws(() => cjs.verifyRun('{', '{}'), (e) => e instanceof cjs.PlimsollError)
})

test('without its platform package the package says which one to install', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plimsoll-no-binding-'))
  try {
    for (const f of ['index.js', 'native.js', 'package.json']) copyFileSync(new URL(`../${f}`, import.meta.url), join(dir, f))
    const r = spawnSync(process.execPath, ['-e', "require('./index.js')"], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH } })
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /the native binding for linux-x64-gnu did not load/)
    assert.match(r.stderr, /plimsoll-linux-x64-gnu/)
    assert.match(r.stderr, /ERR_PLIMSOLL_NATIVE_BINDING/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
