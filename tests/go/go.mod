module example.invalid/plimsoll-go

go 1.19
