module helm-operator-ts/hack/pause

go 1.26
