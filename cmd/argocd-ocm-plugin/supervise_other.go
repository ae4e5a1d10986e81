//go:build !unix

package main

import "errors"

func supervise(argv, env []string, stop stopPolicy) (int, error) {
	return 0, errors.New("supervising a command needs a unix system")
}
