// The package's ES module entry (`import … from 'plimsoll'`): the same objects
// as `require('plimsoll')` (index.js), as named exports and as the default.
import plimsoll from './index.js'

export const {
  Chain,
  Client,
  Engine,
  Session,
  PROTOCOL,
  errorCodes,
  errorForCode,
  verifyRun,
  version,
  PlimsollError,
  ConfigError,
  InvalidRequestError,
  ProtocolMissingError,
  ProtocolMismatchError,
  UnauthenticatedError,
  PermissionDeniedError,
  DisabledError,
  UnsupportedError,
  InsufficientIsolationError,
  SoftwareMismatchError,
  AtCapacityError,
  SessionEndedError,
  InfrastructureError,
  AbortError,
  DeadlineExceededError,
  RecordMismatchError,
  IsolationEvidenceMismatchError,
  TransportError,
} = plimsoll
export default plimsoll
