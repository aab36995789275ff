package objstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// checksumWhenRequired keeps x-amz-checksum-* headers off object uploads, for
// S3-compatible servers that reject them. Setting the client's
// RequestChecksumCalculation is not enough: gocloud uploads through the S3
// transfer manager, which sets its own (when-supported) per call and names
// CRC32 on every part. So for the upload operations the caller-side
// algorithm fields are cleared and the SDK's checksum setup step is removed;
// operations that require a checksum (DeleteObjects) keep it.
func checksumWhenRequired(stack *middleware.Stack) error {
	switch stack.ID() {
	case "PutObject", "UploadPart":
		stack.Initialize.Remove("AWSChecksum:SetupInputContext")
	case "CreateMultipartUpload", "CompleteMultipartUpload":
	default:
		return nil
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("floe/ClearUploadChecksums",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			switch v := in.Parameters.(type) {
			case *s3.PutObjectInput:
				v.ChecksumAlgorithm = ""
				v.ChecksumCRC32, v.ChecksumCRC32C, v.ChecksumCRC64NVME, v.ChecksumSHA1, v.ChecksumSHA256 = nil, nil, nil, nil, nil
			case *s3.UploadPartInput:
				v.ChecksumAlgorithm = ""
				v.ChecksumCRC32, v.ChecksumCRC32C, v.ChecksumCRC64NVME, v.ChecksumSHA1, v.ChecksumSHA256 = nil, nil, nil, nil, nil
			case *s3.CreateMultipartUploadInput:
				v.ChecksumAlgorithm, v.ChecksumType = "", ""
			case *s3.CompleteMultipartUploadInput:
				v.ChecksumType = ""
				v.ChecksumCRC32, v.ChecksumCRC32C, v.ChecksumCRC64NVME, v.ChecksumSHA1, v.ChecksumSHA256 = nil, nil, nil, nil, nil
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}
