module github.com/musterd/musterd

go 1.26.0

require github.com/stretchr/testify v1.12.1

require (
	github.com/asaskevich/EventBus v0.0.0-20200907212545-49d423059eef // indirect
	github.com/prometheus/client_golang v1.24.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	k8s.io/client-go v0.37.0 // indirect
)
