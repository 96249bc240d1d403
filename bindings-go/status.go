package plimsoll

// #include "plimsoll.h"
import "C"

// statusOf gives the C status for a code (tests build errors from bare statuses).
func statusOf(c Code) C.plimsoll_status { return C.plimsoll_status(c) }
