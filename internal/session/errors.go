package session

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func isLeaseGone(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound)
}
