// Type-checked use of the package as an ES module (`import … from 'plimsoll'`,
// resolved through the exports map to index.d.mts) with its error classes.
// Compiled with --noEmit by `npm run typecheck`, never run.

import plimsoll, { Engine, InsufficientIsolationError, PlimsollError } from 'plimsoll'
import type { JavaScriptResult } from 'plimsoll'

export async function floor(engine: Engine): Promise<string> {
  try {
    const r: JavaScriptResult = await engine.runJavaScript('1', { minimumIsolation: 'kernel' })
    return r.isolation
  } catch (e) {
    if (e instanceof InsufficientIsolationError) {
      const code: 'insufficient_isolation' = e.code
      return `${code} ${e.notDispatched ?? 'may have run'}`
    }
    if (e instanceof plimsoll.ConfigError) return e.variable
    if (e instanceof PlimsollError) return `${e.code} ${e.codeNumber}`
    throw e
  }
}
