/* The convolutions of ResNet-50 (torchvision's, v1.5: a bottleneck's stride sits on its
 * 3x3, not on its first 1x1) at a 224x224 input, as unique shapes with how often each
 * occurs: 23 shapes, 53 convolutions. gaio_bench_conv times each shape once; the
 * driver (conv_resnet50.py) weights the figures by `count` for the network's sum.
 *
 * `residual` is how many of the `count` convolutions feed a residual add (the last
 * 1x1 of a bottleneck: y = relu(conv3(...) + shortcut)); the table shows it. A
 * projection shortcut (downsample) makes the add's other operand, so it is not one,
 * although it shares the 1x1 64->256 shape of layer1's conv3. */
#ifndef GAIO_BENCH_CONV_LAYERS_H
#define GAIO_BENCH_CONV_LAYERS_H

typedef struct conv_layer {
    const char *name;
    int c, k;       /* input, output channels */
    int r;          /* filter height = width */
    int stride, pad; /* both dimensions; pad on every side */
    int h;          /* input height = width */
    int count;      /* convolutions of this shape in the network */
    int residual;   /* of those, how many a residual add follows */
} conv_layer;

static const conv_layer conv_layers[] = {
    /* stem: 224 -> 112, then a 3x3/2 max pool to 56 */
    {"conv1 7x7/2", 3, 64, 7, 2, 3, 224, 1, 0},
    /* layer1: 3 bottlenecks at 56x56, width 64, out 256 */
    {"l1 1x1 64>64", 64, 64, 1, 1, 0, 56, 1, 0},
    {"l1 3x3 64>64", 64, 64, 3, 1, 1, 56, 3, 0},
    {"l1 1x1 64>256", 64, 256, 1, 1, 0, 56, 4, 3}, /* 3 conv3 + the downsample */
    {"l1 1x1 256>64", 256, 64, 1, 1, 0, 56, 2, 0},
    /* layer2: 4 bottlenecks, 56 -> 28, width 128, out 512 */
    {"l2 1x1 256>128", 256, 128, 1, 1, 0, 56, 1, 0},
    {"l2 3x3/2 128>128", 128, 128, 3, 2, 1, 56, 1, 0},
    {"l2 1x1 128>512", 128, 512, 1, 1, 0, 28, 4, 4},
    {"l2 down 256>512/2", 256, 512, 1, 2, 0, 56, 1, 0},
    {"l2 1x1 512>128", 512, 128, 1, 1, 0, 28, 3, 0},
    {"l2 3x3 128>128", 128, 128, 3, 1, 1, 28, 3, 0},
    /* layer3: 6 bottlenecks, 28 -> 14, width 256, out 1024 */
    {"l3 1x1 512>256", 512, 256, 1, 1, 0, 28, 1, 0},
    {"l3 3x3/2 256>256", 256, 256, 3, 2, 1, 28, 1, 0},
    {"l3 1x1 256>1024", 256, 1024, 1, 1, 0, 14, 6, 6},
    {"l3 down 512>1024/2", 512, 1024, 1, 2, 0, 28, 1, 0},
    {"l3 1x1 1024>256", 1024, 256, 1, 1, 0, 14, 5, 0},
    {"l3 3x3 256>256", 256, 256, 3, 1, 1, 14, 5, 0},
    /* layer4: 3 bottlenecks, 14 -> 7, width 512, out 2048 */
    {"l4 1x1 1024>512", 1024, 512, 1, 1, 0, 14, 1, 0},
    {"l4 3x3/2 512>512", 512, 512, 3, 2, 1, 14, 1, 0},
    {"l4 1x1 512>2048", 512, 2048, 1, 1, 0, 7, 3, 3},
    {"l4 down 1024>2048/2", 1024, 2048, 1, 2, 0, 14, 1, 0},
    {"l4 1x1 2048>512", 2048, 512, 1, 1, 0, 7, 2, 0},
    {"l4 3x3 512>512", 512, 512, 3, 1, 1, 7, 2, 0},
};

#define CONV_LAYER_COUNT (sizeof conv_layers / sizeof conv_layers[0])

/* The output height (= width) of a layer. */
static inline int conv_layer_out(const conv_layer *l) {
    return (l->h + 2 * l->pad - l->r) / l->stride + 1;
}

#endif
