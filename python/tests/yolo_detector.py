"""The YOLOv8-style detector of the model tests and benchmarks (ultralytics' structure,
small widths): C2f blocks with Split / Concat, SPPF max pools, nearest Upsample, a
distribution-focal head with Softmax / Reshape / Transpose, anchors through Range /
Expand. Shared by python/tests/test_model_zoo_gpu.py and bench/model_bench.py."""


def yolo(torch, nc=80, reg_max=16, width=(16, 32, 64, 128, 256)):
    """A YOLOv8-style detector (ultralytics' structure, small widths): [N, 3, H, W] ->
    [N, 4 + nc, anchors] (boxes in pixels, class scores), H and W multiples of 32."""
    nn = torch.nn

    class Conv(nn.Module):
        def __init__(self, ci, co, k=1, s=1):
            super().__init__()
            self.conv = nn.Conv2d(ci, co, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(co)

        def forward(self, x):
            return nn.functional.silu(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut):
            super().__init__()
            self.cv1, self.cv2, self.add = Conv(c, c, 3), Conv(c, c, 3), shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C2f(nn.Module):
        def __init__(self, ci, co, n=1, shortcut=True):
            super().__init__()
            self.c = co // 2
            self.cv1 = Conv(ci, 2 * self.c)
            self.cv2 = Conv((2 + n) * self.c, co)
            self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

        def forward(self, x):
            y = list(self.cv1(x).split((self.c, self.c), 1))
            y.extend(m(y[-1]) for m in self.m)
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(self, ci, co):
            super().__init__()
            self.cv1, self.cv2 = Conv(ci, ci // 2), Conv(ci * 2, co)
            self.m = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            y = [self.cv1(x)]
            y.extend(self.m(y[-1]) for _ in range(3))
            return self.cv2(torch.cat(y, 1))

    class Detect(nn.Module):
        def __init__(self, chs, strides):
            super().__init__()
            self.nc, self.reg_max, self.no = nc, reg_max, nc + 4 * reg_max
            self.strides = strides
            c2, c3 = max(16, chs[0] // 4, reg_max * 4), max(chs[0], min(nc, 100))
            self.cv2 = nn.ModuleList(nn.Sequential(Conv(c, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
                                     for c in chs)
            self.cv3 = nn.ModuleList(nn.Sequential(Conv(c, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1))
                                     for c in chs)
            self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
            self.dfl.weight.data[:] = torch.arange(reg_max, dtype=torch.float).view(1, reg_max, 1, 1)

        def anchors(self, feats):
            points, strides = [], []
            for f, stride in zip(feats, self.strides):
                _, _, h, w = f.shape
                sx = torch.arange(w, device=f.device, dtype=f.dtype) + 0.5  # Range on the traced width
                sy = torch.arange(h, device=f.device, dtype=f.dtype) + 0.5
                sy, sx = torch.meshgrid(sy, sx, indexing="ij")  # Expand
                points.append(torch.stack((sx, sy), -1).view(-1, 2))
                strides.append(torch.full((h * w, 1), stride, dtype=f.dtype, device=f.device))
            return torch.cat(points).transpose(0, 1), torch.cat(strides).transpose(0, 1)

        def forward(self, xs):
            xs = [torch.cat((self.cv2[i](x), self.cv3[i](x)), 1) for i, x in enumerate(xs)]
            n = xs[0].shape[0]
            anchor, stride = self.anchors(xs)
            cat = torch.cat([x.view(n, self.no, -1) for x in xs], 2)
            box, cls = cat.split((4 * self.reg_max, self.nc), 1)
            a = box.shape[2]
            dist = self.dfl(box.view(n, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(n, 4, a)
            lt, rb = dist.chunk(2, 1)
            x1y1, x2y2 = anchor.unsqueeze(0) - lt, anchor.unsqueeze(0) + rb
            boxes = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * stride
            return torch.cat((boxes, cls.sigmoid()), 1)

    class Yolo(nn.Module):
        def __init__(self):
            super().__init__()
            a, b, c, d, e = width
            self.stem = nn.Sequential(Conv(3, a, 3, 2), Conv(a, b, 3, 2), C2f(b, b))
            self.p3 = nn.Sequential(Conv(b, c, 3, 2), C2f(c, c, 2))
            self.p4 = nn.Sequential(Conv(c, d, 3, 2), C2f(d, d, 2))
            self.p5 = nn.Sequential(Conv(d, e, 3, 2), C2f(e, e), SPPF(e, e))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.n4, self.n3 = C2f(e + d, d, shortcut=False), C2f(d + c, c, shortcut=False)
            self.d3, self.o4 = Conv(c, c, 3, 2), C2f(c + d, d, shortcut=False)
            self.d4, self.o5 = Conv(d, d, 3, 2), C2f(d + e, e, shortcut=False)
            self.detect = Detect((c, d, e), (8.0, 16.0, 32.0))

        def forward(self, x):
            p3 = self.p3(self.stem(x))
            p4 = self.p4(p3)
            p5 = self.p5(p4)
            n4 = self.n4(torch.cat((self.up(p5), p4), 1))
            o3 = self.n3(torch.cat((self.up(n4), p3), 1))
            o4 = self.o4(torch.cat((self.d3(o3), n4), 1))
            o5 = self.o5(torch.cat((self.d4(o4), p5), 1))
            return self.detect([o3, o4, o5])

    return Yolo()
