module example.invalid/plimsoll/bindings-go

go 1.19
