package testsupport

import "fmt"

// QuietAsynq is an asynq.Logger for tests that start their own asynq
// servers: it drops asynq's routine messages, and turns Fatal (asynq
// giving up, which asynq's contract says must not return) into a panic
// that names why, instead of exiting the test binary without a word.
type QuietAsynq struct{}

func (QuietAsynq) Debug(...any) {}
func (QuietAsynq) Info(...any)  {}
func (QuietAsynq) Warn(...any)  {}
func (QuietAsynq) Error(...any) {}

// Fatal panics with asynq's message.
func (QuietAsynq) Fatal(args ...any) { panic("asynq: " + fmt.Sprint(args...)) }
