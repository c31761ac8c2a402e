/* The cuDNN 9 constants gaio uses, as (name, value) pairs: cudnn_api.h turns them into
 * enumerators, and cudnn_abi_check.c checks each against cuDNN's own header where the
 * build has one. The values are cuDNN 9's ABI: fixed within the major version. */
#ifndef GAIO_DNN_CUDA_CUDNN_VALUES_H
#define GAIO_DNN_CUDA_CUDNN_VALUES_H

#define GAIO_CUDNN_VALUES(X)                                                                                       \
    X(CUDNN_STATUS_SUCCESS, 0)                                                                                     \
    X(CUDNN_STATUS_NOT_SUPPORTED, 3000)                                                                            \
    X(CUDNN_DATA_FLOAT, 0)                                                                                         \
    X(CUDNN_DATA_HALF, 2)                                                                                          \
    X(CUDNN_CROSS_CORRELATION, 1)                                                                                  \
    X(CUDNN_POINTWISE_ADD, 0)                                                                                      \
    X(CUDNN_POINTWISE_RELU_FWD, 100)                                                                               \
    X(CUDNN_POINTWISE_TANH_FWD, 101)                                                                               \
    X(CUDNN_POINTWISE_SIGMOID_FWD, 102)                                                                            \
    X(CUDNN_POINTWISE_GELU_FWD, 104)                                                                               \
    X(CUDNN_POINTWISE_SWISH_FWD, 106)                                                                              \
    X(CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, 107)                                                                   \
    X(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, 0)                                                                       \
    X(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, 1)                                                                     \
    X(CUDNN_BACKEND_ENGINE_DESCRIPTOR, 2)                                                                          \
    X(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, 3)                                                                       \
    X(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, 4)                                                                      \
    X(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 5)                                                                  \
    X(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, 10)                                                  \
    X(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, 13)                                                            \
    X(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, 15)                                                                 \
    X(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, 16)                                                                   \
    X(CUDNN_BACKEND_TENSOR_DESCRIPTOR, 17)                                                                         \
    X(CUDNN_TYPE_HANDLE, 0)                                                                                        \
    X(CUDNN_TYPE_DATA_TYPE, 1)                                                                                     \
    X(CUDNN_TYPE_BOOLEAN, 2)                                                                                       \
    X(CUDNN_TYPE_INT64, 3)                                                                                         \
    X(CUDNN_TYPE_FLOAT, 4)                                                                                         \
    X(CUDNN_TYPE_DOUBLE, 5)                                                                                        \
    X(CUDNN_TYPE_VOID_PTR, 6)                                                                                      \
    X(CUDNN_TYPE_CONVOLUTION_MODE, 7)                                                                              \
    X(CUDNN_TYPE_HEUR_MODE, 8)                                                                                     \
    X(CUDNN_TYPE_POINTWISE_MODE, 14)                                                                               \
    X(CUDNN_TYPE_BACKEND_DESCRIPTOR, 15)                                                                           \
    X(CUDNN_TYPE_BEHAVIOR_NOTE, 19)                                                                                \
    X(CUDNN_TYPE_NUMERICAL_NOTE, 11)                                                                               \
    X(CUDNN_TYPE_CHAR, 24)                                                                                         \
    X(CUDNN_NUMERICAL_NOTE_TENSOR_CORE, 0)                                                                         \
    X(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, 1)                                                                 \
    X(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION, 2)                                                         \
    X(CUDNN_HEUR_MODE_FALLBACK, 2)                                                                                 \
    X(CUDNN_HEUR_MODE_A, 3)                                                                                        \
    X(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION, 0)                                                                  \
    X(CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API, 3)                                                       \
    X(CUDNN_ATTR_POINTWISE_MODE, 0)                                                                                \
    X(CUDNN_ATTR_POINTWISE_MATH_PREC, 1)                                                                           \
    X(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, 3)                                                                     \
    X(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, 4)                                                                     \
    X(CUDNN_ATTR_POINTWISE_SWISH_BETA, 8)                                                                          \
    X(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, 100)                                                                       \
    X(CUDNN_ATTR_CONVOLUTION_CONV_MODE, 101)                                                                       \
    X(CUDNN_ATTR_CONVOLUTION_DILATIONS, 102)                                                                       \
    X(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 103)                                                                  \
    X(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, 104)                                                                   \
    X(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 105)                                                                    \
    X(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 106)                                                                    \
    X(CUDNN_ATTR_ENGINEHEUR_MODE, 200)                                                                             \
    X(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 201)                                                                  \
    X(CUDNN_ATTR_ENGINEHEUR_RESULTS, 202)                                                                          \
    X(CUDNN_ATTR_ENGINECFG_ENGINE, 300)                                                                            \
    X(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, 400)                                                                       \
    X(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 401)                                                                \
    X(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 402)                                                               \
    X(CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, 405)                                                          \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 700)                                                         \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 701)                                                          \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, 702)                                                     \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, 703)                                                             \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, 704)                                                             \
    X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, 705)                                                             \
    X(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, 750)                                                           \
    X(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, 751)                                                                   \
    X(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, 752)                                                                   \
    X(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, 753)                                                                   \
    X(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, 800)                                                                       \
    X(CUDNN_ATTR_OPERATIONGRAPH_OPS, 801)                                                                          \
    X(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 900)                                                                       \
    X(CUDNN_ATTR_TENSOR_DATA_TYPE, 901)                                                                            \
    X(CUDNN_ATTR_TENSOR_DIMENSIONS, 902)                                                                           \
    X(CUDNN_ATTR_TENSOR_STRIDES, 903)                                                                              \
    X(CUDNN_ATTR_TENSOR_UNIQUE_ID, 906)                                                                            \
    X(CUDNN_ATTR_TENSOR_IS_VIRTUAL, 907)                                                                           \
    X(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, 1000)                                                                    \
    X(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, 1001)                                                                 \
    X(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, 1003)                                                                     \
    X(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 1301)                                                                        \
    X(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, 1303)                                                                      \
    X(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, 1305)

#endif
