module probe.test/h2versions

go 1.26
