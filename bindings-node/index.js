'use strict'
// The package's entry (`require('plimsoll')`; `import` goes through index.mjs):
// the native binding that napi-rs builds (native.js loads it, from this
// directory or from the platform package `plimsoll-<platform>-<arch>-<libc>`),
// and the error classes it makes every error it throws or rejects with an
// instance of (registered with it at load): `err instanceof PlimsollError`,
// one subclass per code, as in Python. The native side decides every field
// (code, codeNumber, notDispatched, sessionEnd, unanswered).

// The prebuilt targets and their packages (optionalDependencies of this one).
const PLATFORM_PACKAGES = { 'linux-x64-gnu': 'plimsoll-linux-x64-gnu' }

function platformTarget() {
  let libc = ''
  if (process.platform === 'linux') {
    const header = process.report && process.report.getReport ? process.report.getReport().header : null
    libc = header && header.glibcVersionRuntime ? '-gnu' : '-musl'
  }
  return `${process.platform}-${process.arch}${libc}`
}

let native
try {
  native = require('./native.js')
} catch (cause) {
  const target = platformTarget()
  const pkg = PLATFORM_PACKAGES[target]
  const error = new Error(
    pkg
      ? `plimsoll: the native binding for ${target} did not load. It comes in the platform package ${pkg}, an optional ` +
          `dependency of plimsoll: install it (npm install ${pkg}@${require('./package.json').version}), or reinstall ` +
          'plimsoll without --omit=optional / --no-optional.'
      : `plimsoll: there is no prebuilt binding for ${target}; prebuilt: ${Object.keys(PLATFORM_PACKAGES).join(', ')}. ` +
          'Build one from source with `npm run build:release` in bindings-node.',
  )
  error.code = 'ERR_PLIMSOLL_NATIVE_BINDING'
  error.cause = cause
  throw error
}

/** Base of every error plimsoll raises for a run or a session. Branch on `code`, never the message. */
class PlimsollError extends Error {}
/** An engine configuration plimsoll cannot start with; `variable` names the variable. */
class ConfigError extends Error {}

Object.defineProperty(PlimsollError.prototype, 'name', { value: 'PlimsollError', writable: true, configurable: true })
Object.defineProperty(ConfigError.prototype, 'name', { value: 'ConfigError', writable: true, configurable: true })

// One class per code, named as the native side names it (`errorCodes()`, one
// match in src/errors.rs): the classes and the codes cannot drift apart.
const CLASSES = { config: ConfigError }
for (const { name: code, errorName } of native.errorCodes()) {
  const cls = class extends PlimsollError {}
  Object.defineProperty(cls, 'name', { value: errorName })
  Object.defineProperty(cls.prototype, 'name', { value: errorName, writable: true, configurable: true })
  CLASSES[code] = cls
}
native.registerErrorClasses(CLASSES)

const { registerErrorClasses: _, ...api } = native
module.exports = { ...api, PlimsollError, ConfigError }
for (const [code, cls] of Object.entries(CLASSES)) if (code !== 'config') module.exports[cls.name] = cls
