// Package queue groups what moves a task from its enqueuer to a worker
// besides asynq itself: the doorbell that wakes idle workers the moment a
// task is queued (doorbell) and the fleet's announcements of which envelope
// versions its workers serve (fleet).
package queue
