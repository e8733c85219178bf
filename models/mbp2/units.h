// The functional units of the MBP2 NIC (thesis 8.2) that have timing of their own, one file
// each: the host I/O bus interface (BIU, `host_bus.h`), the card-embedded memory (EM, `em.h`)
// with its four access routes, the context-tagged TLB (`tlb.h`), the protocol management
// engine (PME, `pme.h`) with its interrupt models, the kernel and user-level interfaces (`kli.h`,
// `icu.h`, and the doorbell aliases of the Memory-based Virtual Interface of 8.3.2, `uli.h`),
// the DMA engines with descriptor rings (PGE, ADMA, LDMA: `dma_engine.h`, their ports
// `dma_port.h` and `mac_fifo.h`, the firmware's view `firmware_ring.h`), frame buffers
// (`frame_pool.h`), the CSU and OCU (`csu.h`, `ocu.h`), and the crypto units (`cau.h`,
// `meac.h`). Each is a SystemC module with its own busy-until time, statistics, and a unit
// test (`tests/unit/mbp2_units_test.cpp`); the card, Mbp2Nic (mbp2_nic.h), wires them into the send
// and receive paths of 8.3.3. Times are picoseconds. This header gathers them for the NIC.
#pragma once
#include "models/mbp2/cau.h"
#include "models/mbp2/csu.h"
#include "models/mbp2/dma_engine.h"
#include "models/mbp2/dma_port.h"
#include "models/mbp2/em.h"
#include "models/mbp2/firmware_ring.h"
#include "models/mbp2/frame_pool.h"
#include "models/mbp2/host_bus.h"
#include "models/mbp2/icu.h"
#include "models/mbp2/kli.h"
#include "models/mbp2/mac_fifo.h"
#include "models/mbp2/meac.h"
#include "models/mbp2/ocu.h"
#include "models/mbp2/pme.h"
#include "models/mbp2/tlb.h"
#include "models/mbp2/uli.h"
#include "models/mbp2/unit.h"
