module github.com/hibiken/asynq

go 1.24.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/google/uuid v1.6.0
	github.com/redis/go-redis/v9 v9.14.1
	github.com/robfig/cron/v3 v3.0.1
	github.com/spf13/cast v1.10.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.37.0
	golang.org/x/time v0.14.0
	google.golang.org/protobuf v1.36.10
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
)
