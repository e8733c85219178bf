// Parameters of the conventional hosts' socket stack (inet_stack.h). Defaults describe SunOS
// 4.1.4 (4.3BSD-derived) on the thesis's first cluster (6.2.1): SPARCstation 20, Sun
// FastEthernet SBus Adapter 2.0. Path lengths are estimates from the BSD code's structure (no
// figure of the thesis sets them: docs/VALIDATION.md, "UDP/IP on SunOS 4.1.4"); limits are the
// BSD sources' constants.
#include <string>

#include "models/core/config.h"
#include "models/core/params.h"
#include "models/mbp2/inet.h"
#include "models/sockets/inet_stack.h"

namespace mbpsim::sockets {

const ParamTable<SocketConfig>& SocketConfig::params() {
  static const ParamTable<SocketConfig> t = ParamTable<SocketConfig>()
      .add(&SocketConfig::sosend_instr, {"sockets.sosend_instr", 600.0, "instructions",
         "sosend for a datagram: sblock, the space check, MGET/MCLGET of the mbufs, uiomove's set-up and the protocol's user request (the copy itself at host.copy_mb_s); an estimate", 0, 1e9})
      .add(&SocketConfig::udp_output_instr, {"sockets.udp_output_instr", 250.0, "instructions", "udp_output: the UDP and pseudo headers prepended (the checksum at sockets.cksum_cycles_per_byte); an estimate", 0, 1e9})
      .add(&SocketConfig::ip_output_instr, {"sockets.ip_output_instr", 350.0, "instructions", "ip_output: the cached route, the IP header and its checksum; an estimate", 0, 1e9})
      .add(&SocketConfig::frag_instr, {"sockets.frag_instr", 200.0, "instructions", "ip_output per fragment of a datagram larger than the MTU: a header mbuf, the header copied, m_copy of the piece, the fragment's header checksum; an estimate", 0, 1e9})
      .add(&SocketConfig::ether_output_instr, {"sockets.ether_output_instr", 300.0, "instructions", "ether_output per frame: the ARP cache hit, the Ethernet header, IF_ENQUEUE on the interface queue; an estimate", 0, 1e9})
      .add(&SocketConfig::driver_tx_instr, {"sockets.driver_tx_instr", 300.0, "instructions",
         "the driver's start routine per frame, beside its buffers' mappings (sockets.dvma_map_instr) or copy: the transmit ring's reclaim check, a descriptor per buffer written, the adapter kicked; an estimate (500 for the whole frame with its mappings until 2026-12-06: a two-mbuf frame, as a small datagram's, still costs 500)", 0, 1e9})
      .add(&SocketConfig::driver_max_maps, {"sockets.driver_max_maps", 2, "buffers",
         "the most mbufs of a frame the driver's start routine maps for the NIC's DMA one by one; a frame in more is first copied into one fresh buffer (sockets.driver_pullup_instr and the copy at host.copy_mb_s) and mapped once. 2: Sun's driver for the FastEthernet SBus Adapter 2.0 (FEPS), as its Solaris version hme.c does it (hmestart: one or two blocks mapped with dvma_kaddr_load, 'more than 2 mblks ... we copy all of them into a msg with one mblk'); its SunOS 4.1.4 version is not in the sources read, and is assumed to do the same with mbufs. 0: the frame's cost is sockets.driver_tx_instr alone, whatever its buffers (drivers the model charges per frame); ignored when sockets.driver_copies", 0, 64})
      .add(&SocketConfig::dvma_map_instr, {"sockets.dvma_map_instr", 100.0, "instructions",
         "with sockets.driver_max_maps: each buffer of a frame mapped for the NIC's DMA and released: dvma_kaddr_load (the IOMMU's page entry written and its TLB entry flushed), dvma_sync, the descriptor's sync, and at reclaim dvma_unload and the buffer freed; an estimate", 0, 1e9})
      .add(&SocketConfig::driver_pullup_instr, {"sockets.driver_pullup_instr", 150.0, "instructions",
         "with sockets.driver_max_maps: a frame in more buffers than it allows copied into one (hmestart's hmeallocb and mcopymsg: a buffer allocated, the chain walked and freed), beside the copy itself at host.copy_mb_s; an estimate", 0, 1e9})
      .add(&SocketConfig::driver_rx_copy_max, {"sockets.driver_rx_copy_max", 112, "bytes",
         "with sockets.mbuf_accounting: the longest received IP packet the driver copies into small mbufs (a socket buffer is charged 128 bytes for each) rather than handing up the receive buffer it filled as one cluster-type mbuf (charged 1152, whatever it holds). 112 (MLEN): SunOS 4.1.4's le_read for the on-board LANCE (if_le.c: copy_to_mbufs for a frame of MLEN or less), and assumed for the SBus FastEthernet card's SunOS driver, which is not in the sources read. 0: every frame loaned, as that card's Solaris driver does (hme.c's hmeread); under it the thesis's ray tracing over UDP100 with two calculators and 1-byte payloads never finishes (the display's receive buffer holds 29 datagrams; docs/VALIDATION.md, 'The SBus card's receive buffers'), where the thesis measured it, so the copy is kept; at most MLEN", 0, 112})
      .add(&SocketConfig::driver_rx_instr, {"sockets.driver_rx_instr", 500.0, "instructions",
         "the driver's receive path per frame: a fresh mbuf cluster mapped for DVMA in place of the filled one, the frame's mbuf on ipintrq, schednetisr; an estimate", 0, 1e9})
      .add(&SocketConfig::driver_copies, {"sockets.driver_copies", false, "",
         "the driver copies each frame between mbufs and the NIC's own DVMA buffers at host.copy_mb_s (the SS20's on-board LANCE, whose driver keeps premapped buffers) instead of mapping mbufs", 0, 1})
      .add(&SocketConfig::ipintr_instr, {"sockets.ipintr_instr", 300.0, "instructions", "ipintr per frame taken off ipintrq: the header checks and its checksum, the destination check; an estimate", 0, 1e9})
      .add(&SocketConfig::reass_instr, {"sockets.reass_instr", 200.0, "instructions", "ip_reass per fragment: the reassembly queue's search and insertion; an estimate", 0, 1e9})
      .add(&SocketConfig::udp_input_instr, {"sockets.udp_input_instr", 400.0, "instructions",
         "udp_input: the checksum's set-up (its bytes at sockets.cksum_cycles_per_byte), the PCB lookup, sbappendaddr and sorwakeup; an estimate", 0, 1e9})
      .add(&SocketConfig::soreceive_instr, {"sockets.soreceive_instr", 600.0, "instructions", "soreceive for a datagram: sblock, the address mbuf, uiomove's set-up, the mbufs freed (the copy at host.copy_mb_s); an estimate", 0, 1e9})
      .add(&SocketConfig::mbuf_instr, {"sockets.mbuf_instr", 110.0, "instructions",
         "with sockets.mbuf_accounting (BSD's mbufs): the socket layer's loop for each mbuf of a call after the first, whose work sockets.sosend_instr and sockets.soreceive_instr hold: in sosend, MGET, MCLGET for a cluster and uiomove's call for the piece (SunOS 4.1.4's uipc_socket.c: a 1,408-byte datagram takes a cluster and four small mbufs); in soreceive, uiomove's call, sbfree and MFREE; an estimate (the copies at host.copy_mb_s)", 0, 1e9})
      .add(&SocketConfig::stream_write_instr, {"sockets.stream_write_instr", 0.0, "instructions",
         "the write side of a socket that is a stream (Solaris 2.x; 0 for BSD's sockets, as SunOS 4.1.4's): per message a send() or sendto() hands down, the stream head's write (a data block allocated, the TPI T_DATA_REQ or T_UNITDATA_REQ header block built) and the put procedures between it and the transport, which takes the data off the request and queues it (the copy at host.copy_mb_s); set per OS, see docs/VALIDATION.md", 0, 1e9})
      .add(&SocketConfig::stream_piece_instr, {"sockets.stream_piece_instr", 500.0, "instructions",
         "with sockets.tcp_snd_flow streams: the stream head's work for each piece of a write after the first (strwrite's loop in Solaris's streamio.c: the canputnext test, strmakemsg's allocb for each sd_maxblk of the piece, the rwnext attempt, struioget, putnext to TCP and its queueing of the piece, queuerun; the copy at host.copy_mb_s, TCP's segments at their own lengths); the first piece pays sockets.sosend_instr and sockets.stream_write_instr, which hold the call's own work; an estimate", 0, 1e9})
      .add(&SocketConfig::rudp_instr, {"sockets.rudp_instr", 300.0, "instructions",
         "the user-level Go-back-N routine per packet sent or received over UDP (6.2.3: MBCF/Ether's protocol 'in terms of user-level routines'): its header, the protocol's tables; an estimate", 0, 1e9})
      .add(&SocketConfig::cksum_cycles_per_byte, {"sockets.cksum_cycles_per_byte", 0.6, "cycles/byte",
         "in_cksum over data in the cache: about 0.6 instructions per byte unrolled (a load and an add with carry per 32-bit word, the loop's overhead spread over its unrolled words), about one cycle each; data no cache holds (a received frame the NIC's DMA wrote) also stalls host.cold_line_ns per line; an estimate", 0, 1e6})
      .add(&SocketConfig::udp_cksum, {"sockets.udp_cksum", false, "",
         "UDP checksums: udp_output sums the pseudo-header, header and data (sockets.cksum_cycles_per_byte) and udp_input checks a datagram whose sender summed it; false: the sender stores 0 ('no checksum', RFC 768) and the receiver checks nothing, so soreceive's copy out is the first touch of a received frame's data. SunOS 4.1.4 ships it off (its in_proto.c: udp_cksum = 0, 'turn on to check & generate udp checksums'); Solaris's udp_do_checksum is 1", 0, 1})
      .add_choice(&SocketConfig::udp_streams_rcv, {"sockets.udp_rcv_flow", "bsd", "",
         "when a UDP socket drops a datagram that arrives: bsd (sbappendaddr: when its bytes and its 16-byte address do not fit in what is left of sockets.udp_recvspace) | streams (Solaris 2.6: the datagram goes up to the stream head unless its queue holds sockets.udp_recvspace bytes or more, the high-water mark udp_open sets from udp_recv_hiwat (udp.c 1.52 96/10/28 SMI: 'The receive hiwat is only looked at on the stream head queue'), which IP's canputnext test reads before it hands the datagram up; a datagram longer than the mark is taken whole into an emptier queue; needs sockets.mbuf_accounting false)"},
                  {{"bsd", false}, {"streams", true}})
      .add(&SocketConfig::ifq_maxlen, {"sockets.ifq_maxlen", 50, "frames", "the interface's send queue (4.3BSD IFQ_MAXLEN): a frame that finds it full is dropped and the call fails with ENOBUFS", 1, 1 << 20})
      .add(&SocketConfig::ipintrq_maxlen, {"sockets.ipintrq_maxlen", 50, "frames", "ipintrq, between the driver and netisr (4.3BSD IFQ_MAXLEN): a frame that finds it full is dropped; with sockets.ip_input interrupt, the frames the driver's interrupt routine has yet to hand up (its receive ring)", 1, 1 << 20})
      .add_choice(&SocketConfig::ip_input_in_interrupt, {"sockets.ip_input", "netisr", "",
         "where a received frame's IP and transport input run: netisr (4.3BSD and SunOS 4.1.4: the driver queues the frame on ipintrq and posts schednetisr; ipintr runs it in a software interrupt, whose dispatch is host.softint_instr) | interrupt (Solaris 2.x STREAMS: the driver's interrupt routine hands an IP frame up with putnext (the DLPI 'IP shortcut' of Solaris's le driver, leread), and ip_rput, ip_rput_local and the transport's put procedure run at once in that interrupt thread (ip.c 1.108 96/10/18 SMI): no software interrupt)"},
                  {{"netisr", false}, {"interrupt", true}})
      .add(&SocketConfig::udp_sendspace, {"sockets.udp_sendspace", 9000, "bytes", "the largest datagram a UDP socket sends (SunOS 4.1.4's in_proto.c: udp_sendspace = 9000, 'really max datagram size'): longer is EMSGSIZE", 1, mbp2::kUdpMaxPayload})
      .add(&SocketConfig::udp_recvspace, {"sockets.udp_recvspace", 18032, "bytes", "a UDP socket's receive buffer (SunOS 4.1.4's in_proto.c: 2 x (9000 + 16), two 8 KB datagrams with their addresses): a datagram that does not fit is dropped", 64, 1 << 30})
      .add(&SocketConfig::mtu, {"sockets.mtu", 1500, "bytes", "the interface's MTU (Ethernet): IP packets larger are fragmented", 68, 1500})
      .add(&SocketConfig::ipfrag_ttl_s, {"sockets.ipfrag_ttl_s", 30.0, "s", "how long IP keeps the fragments of an incomplete datagram (4.3BSD IPFRAGTTL: 60 ticks of the 500 ms slow timer)", 0.001, 1e6})
      // TCP (tcp.h)
      .add(&SocketConfig::tcp_output_instr, {"sockets.tcp_output_instr", 700.0, "instructions",
         "tcp_output per segment: the send decision (window, Nagle, window update), the header template, m_copy of the data from the send buffer, the timers set (the checksum at sockets.cksum_cycles_per_byte, ip_output, ether_output and the driver at their own lengths); an estimate", 0, 1e9})
      .add(&SocketConfig::tcp_input_instr, {"sockets.tcp_input_instr", 1100.0, "instructions",
         "tcp_input's full path per segment: the PCB lookup, the sequence and window checks, the ACK (sbdrop, RTT, cwnd, timers), the data through tcp_reass, sbappend and sorwakeup (the checksum at sockets.cksum_cycles_per_byte); an estimate", 0, 1e9})
      .add(&SocketConfig::tcp_predict_instr, {"sockets.tcp_predict_instr", 400.0, "instructions",
         "tcp_input when header prediction holds (Van Jacobson, 4.3BSD-Reno): the cached PCB, a pure ACK for new data (sbdrop, RTT, sowwakeup) or pure in-order data (sbappend, sorwakeup); an estimate", 0, 1e9})
      .add(&SocketConfig::tcp_header_prediction, {"sockets.tcp_header_prediction", false, "",
         "whether tcp_input takes header prediction's short path (sockets.tcp_predict_instr) for the next expected segment: Van Jacobson's, in 4.3BSD-Reno and later; SunOS 4.1.4's tcp_input is 4.3BSD-Tahoe's and has none, so every segment pays sockets.tcp_input_instr", 0, 1})
      .add(&SocketConfig::tcp_sendspace, {"sockets.tcp_sendspace", 4096, "bytes", "a TCP socket's send buffer (4.3BSD tcp_sendspace, 1024 x 4, SunOS 4.1's default)", 1, 1 << 30})
      .add(&SocketConfig::tcp_recvspace, {"sockets.tcp_recvspace", 4096, "bytes", "a TCP socket's receive buffer and so the largest window it offers (4.3BSD tcp_recvspace, 1024 x 4, SunOS 4.1's default)", 64, 65535})
      .add(&SocketConfig::mbuf_accounting, {"sockets.mbuf_accounting", true, "",
         "a TCP socket buffer's space counts the mbufs that hold its data, as SunOS 4.1.4's BSD sockets do (sbspace: the smaller of the bytes left and twice the buffer less the mbuf storage charged, 128 bytes per mbuf and 1024 more per cluster; sosend's clusters from 512 bytes left to copy; the LANCE driver's loaned receive buffers; models/sockets/mbuf_account.h); false: bytes only, as Solaris's STREAMS sockets, with sockets.tcp_send_lowat", 0, 1})
      .add_choice(&SocketConfig::tahoe_window_update, {"sockets.tcp_window_update", "tahoe", "",
         "when tcp_output sends a window update after the user's reads: tahoe (4.3BSD-Tahoe, SunOS 4.1.4's tcp_output.c: the window opened by two segments with the receive buffer empty, or by 35% of the buffer) | reno (4.3BSD-Reno and 4.4BSD: by two segments, or by half the buffer); with sockets.tcp_rcv_window streams neither applies (tcp_rsrv's rule does)"},
                  {{"tahoe", true}, {"reno", false}})
      .add_choice(&SocketConfig::solaris_deferred_ack, {"sockets.tcp_delayed_ack", "bsd", "",
         "how tcp_input acknowledges in-order data: bsd (4.3BSD: by the next tcp_fasttimo tick, every sockets.tcp_delack_ms from boot, unless a segment the connection sends first carries the ACK, such as the window update after the user's read) | solaris (Solaris 2.6's tcp_rput_data, read in its tcp.c 1.156 96/10/31 SMI: an ACK at once when the bytes received since the last ACK reach a limit that starts at 0 and grows by an MSS with each such ACK up to half the receive window in whole segments (tcp_rwnd_set); a segment shorter than an MSS at once when the data before it not yet acknowledged is not a whole number of MSS; otherwise by the connection's timer, restarted sockets.tcp_delack_ms (tcp_deferred_ack_interval) ahead by each deferred segment while the connection has nothing of its own outstanding or unsent, else by its next segment)"},
                  {{"bsd", false}, {"solaris", true}})
      .add(&SocketConfig::tcp_rwnd_whole_mss, {"sockets.tcp_rwnd_whole_mss", false, "",
         "the receive buffer, and so the largest window offered, is rounded up to a whole number of MSS and is at least 4 MSS (Solaris 2.6's tcp_rwnd_set and tcp_mss_set with tcp_recv_hiwat_minmss 4, tcp.c 1.156: 8192 bytes become 8760 with a 1460-byte MSS); false: sockets.tcp_recvspace as it is (BSD)", 0, 1})
      .add_choice(&SocketConfig::streams_rcv_flow, {"sockets.tcp_rcv_window", "bsd", "",
         "the window a TCP receiver offers: bsd (the receive buffer's space left, sbspace) | streams (Solaris 2.6, tcp.c 1.156: the data goes up to the stream head at once and TCP offers its whole window while the stream head's queue is below its high-water mark, the window's size; each segment that finds it at or above the mark shrinks the window by its length (tcp_rput_data's canput test), until the reader drains the queue to the stream head's low-water mark (1024 bytes, STREAMS' STRLOW) and the back-enabled tcp_rsrv reopens the window, with a window update when it had fallen to half or less, or below an MSS)"},
                  {{"bsd", false}, {"streams", true}})
      .add(&SocketConfig::tcp_cksum_in_copy, {"sockets.tcp_cksum_in_copy", false, "",
         "TCP's data is checksummed while send() copies it from the user, and tcp_output sums only the header and those partial sums (Solaris 2.6's synchronous STREAMS: TCP's write queue is STRUIOT_IP, tcp.c 1.156, and the stream head's struioget copies with uioipcopyin, stream.c 1.110 96/10/04 SMI); the combined loop is charged the copy's time alone (an estimate: the add-with-carry per word fits in the copy loop's load and store slots); false: tcp_output sums every segment's data (BSD)", 0, 1})
      .add(&SocketConfig::tcp_rcv_co, {"sockets.tcp_rcv_co", false, "",
         "Solaris 2.6's read-side co (copy-out) queue (tcp.c 1.156: tcp_rput_data called from tcp_rput, and tcp_rrw): an in-order data segment of at least sockets.tcp_co_min bytes, with nothing held for reassembly, is not processed when it arrives: ip_rput_local left its data's checksum undone ('postpone the checksum to TCP for single copy checksum', ip.c 1.108) and tcp_rput only sums its header and queues it (sockets.tcp_co_instr), waking the reader when the segment is shorter than an MSS, carries PSH or FIN, or the queue holds the deferred-ACK limit's bytes; the reader's recv() (strread, rwnext, tcp_rrw) copies each queued segment's data out summing it as it copies (struioput with uioipcopyout: the copy's time alone, an estimate) and then runs TCP's input for it (tcp_rput_data: the ACK it carries, the deferred ACK, the window) in the reader's system call; a segment that is not eligible, or the queue's timer (sockets.tcp_delack_ms after its first segment, tcp_deferred_ack_interval) when no reader came, drains the queue first with the checksums made at interrupt level (tcp_co_drain); needs sockets.tcp_output_rule solaris and sockets.tcp_delayed_ack solaris; false: every segment through tcp_input at once (BSD)", 0, 1})
      .add(&SocketConfig::tcp_co_min, {"sockets.tcp_co_min", 64, "bytes", "with sockets.tcp_rcv_co: the shortest segment the co queue takes (tcp_co_min, 64 in Solaris 2.6's tcp.c 1.156 parameter table)", 0, 65535})
      .add(&SocketConfig::tcp_co_instr, {"sockets.tcp_co_instr", 150.0, "instructions",
         "with sockets.tcp_rcv_co: tcp_rput's work for a segment it puts on the co queue (the eligibility tests, the partial sum of the TCP header, the enqueue, the queue's timer for the first, strwakeq); an estimate", 0, 1e9})
      .add_choice(&SocketConfig::streams_snd_flow, {"sockets.tcp_snd_flow", "bsd", "",
         "what holds back a TCP writer: bsd (the send buffer, sockets.tcp_sendspace, holds the data sent and not yet acknowledged as well as the unsent; sosend copies what fits) | streams (Solaris 2.6, tcp.c 1.156: tcp_wput_data stops the write side's flow when the bytes not yet sent reach sockets.tcp_sendspace, tcp_xmit_hiwater, and re-enables it when they fall to sockets.tcp_send_lowat, tcp_xmit_lowater; data sent and not yet acknowledged does not count; while the flow is on, the stream head hands TCP a write in pieces of sockets.tcp_maxpsz_multiplier segments, each its own message down the stream)"},
                  {{"bsd", false}, {"streams", true}})
      .add_choice(&SocketConfig::solaris_output, {"sockets.tcp_output_rule", "bsd", "",
         "what TCP sends when it may send: bsd (4.3BSD tcp_output: segments of a full MSS cut from the byte stream; Nagle holds a short segment while data is outstanding unless it is all there is and the connection is idle, or TCP_NODELAY) | solaris (Solaris 2.6's tcp_wput_data, tcp.c 1.156: a segment is at most an MSS and never splits a STREAMS data block it does not start in, so it carries whole writes of up to an MSS each (the stream head cuts a write into blocks of at most an MSS, sd_maxblk): 1024-byte writes go one per segment; Nagle's test is made once, when tcp_wput_data is entered: it holds the data only if less than an MSS may go, less than tcp_naglim (an MSS, 1 with TCP_NODELAY), the last segment sent was shorter than tcp_naglim, and data is outstanding; then every segment the window allows goes, the last a short one unless the window, not the data, makes it short (sender silly-window avoidance); PSH is set on the segment that uses up what may go, the window's room or the unsent data (BSD: on the segment that empties the send buffer))"},
                  {{"bsd", false}, {"solaris", true}})
      .add(&SocketConfig::tcp_maxpsz_multiplier, {"sockets.tcp_maxpsz_multiplier", 2, "segments",
         "with sockets.tcp_snd_flow streams: the largest piece of a write the stream head hands down at once (q_maxpsz), in MSS, but at most half the send buffer rounded up to an MSS (Solaris 2.6's tcp_maxpsz_set and its default tcp_maxpsz_multiplier 2, tcp.c 1.156: 2,920 bytes with a 1,460-byte MSS)", 1, 100})
      .add(&SocketConfig::tcp_send_lowat, {"sockets.tcp_send_lowat", 1024, "bytes",
         "without sockets.mbuf_accounting: sosend waits for this much send-buffer space (or for all it has left to copy) before it copies more (with it, SunOS 4.1.4's own rule: mbuf_account.h); with sockets.tcp_snd_flow streams, the unsent bytes at which TCP re-enables the writer (tcp_xmit_lowater)", 1, 1 << 30})
      .add(&SocketConfig::tcp_mss, {"sockets.tcp_mss", 1460, "bytes", "the largest segment's data (tcp_mss: the interface's MTU less 40 bytes of IP and TCP headers on the local network; the smaller of this and sockets.mtu - 40 is used)", 1, 65495})
      .add(&SocketConfig::tcp_initial_cwnd, {"sockets.tcp_initial_cwnd", 65535, "bytes",
         "a new connection's congestion window: SunOS 4.1.4's tcp_newtcpcb sets 65535 and its tcp_mss lowers it to one segment only for a destination off the local network, so the thesis's hosts on one Ethernet start without slow start (it begins after a loss or a source quench); a value below the MSS is one MSS", 1, 65535})
      .add(&SocketConfig::tcp_dupack_thresh, {"sockets.tcp_dupack_thresh", 3, "ACKs", "duplicate ACKs that trigger a fast retransmission (4.3BSD-Tahoe tcprexmtthresh)", 1, 1000})
      .add(&SocketConfig::tcp_max_rexmt, {"sockets.tcp_max_rexmt", 12, "", "retransmission back-offs before the connection is dropped with ETIMEDOUT (4.3BSD TCP_MAXRXTSHIFT)", 1, 64})
      .add(&SocketConfig::tcp_delack_ms, {"sockets.tcp_delack_ms", 200.0, "ms", "the delayed-ACK tick: tcp_fasttimo's period from boot (4.3BSD PR_FASTHZ = 5 per second)", 0.001, 1e6})
      .add(&SocketConfig::tcp_slowtimo_ms, {"sockets.tcp_slowtimo_ms", 500.0, "ms", "the slow timer's tick that counts the retransmission, persist and keep-alive timers (4.3BSD PR_SLOWHZ = 2 per second)", 0.001, 1e6})
      .add(&SocketConfig::tcp_rto_min_s, {"sockets.tcp_rto_min_s", 1.0, "s", "the smallest retransmission timeout (4.3BSD TCPTV_MIN: 2 slow ticks)", 0, 1e6})
      .add(&SocketConfig::tcp_rto_initial_s, {"sockets.tcp_rto_initial_s", 6.0, "s", "the retransmission timeout before the first round-trip measurement (4.3BSD-Reno: t_rxtcur from TCPTV_SRTTDFLT, 12 slow ticks)", 0, 1e6})
      .add(&SocketConfig::tcp_rto_max_s, {"sockets.tcp_rto_max_s", 64.0, "s", "the largest retransmission timeout after back-off (4.3BSD TCPTV_REXMTMAX)", 0, 1e6})
      .add(&SocketConfig::tcp_persist_min_s, {"sockets.tcp_persist_min_s", 5.0, "s", "the smallest interval between probes of a zero window (4.3BSD TCPTV_PERSMIN)", 0, 1e6})
      .add(&SocketConfig::tcp_msl_s, {"sockets.tcp_msl_s", 30.0, "s", "the maximum segment lifetime: TIME_WAIT lasts two (4.3BSD TCPTV_MSL)", 0, 1e6});
  return t;
}

SocketConfig::SocketConfig() { params().set_defaults(*this); }

void declare_socket_params(ParamSchema& s) { SocketConfig::params().declare(s); }

SocketConfig SocketConfig::from(const Config& c) {
  SocketConfig s;
  params().load(s, c);
  // sosend waits for the low-water mark's space: more than the buffer holds would wait forever
  if (s.tcp_send_lowat > s.tcp_sendspace)
    c.fail("sockets.tcp_send_lowat", std::to_string(s.tcp_send_lowat) + " bytes is more than the send buffer holds (sockets.tcp_sendspace " +
                                         std::to_string(s.tcp_sendspace) + ")");
  // Solaris's write side holds its data in STREAMS blocks, not mbufs
  if (s.streams_snd_flow && s.mbuf_accounting)
    c.fail("sockets.tcp_snd_flow", "streams holds the data in STREAMS blocks, not in mbufs: set sockets.mbuf_accounting false");
  // ...and so does its stream head: a queue measured in bytes, not SunOS's mbuf storage
  if (s.udp_streams_rcv && s.mbuf_accounting)
    c.fail("sockets.udp_rcv_flow", "streams queues datagrams at a stream head, not in an mbuf socket buffer: set sockets.mbuf_accounting false");
  // The co queue is Solaris's: it wakes its reader by tcp_wput_data's PSH and the deferred ACK's
  // limit, and BSD's rules would leave a stream waiting for the queue's timer
  if (s.tcp_rcv_co && (!s.solaris_output || !s.solaris_deferred_ack))
    c.fail("sockets.tcp_rcv_co", "the co queue is Solaris's and needs its sender and receiver rules: set sockets.tcp_output_rule solaris and sockets.tcp_delayed_ack solaris");
  return s;
}

}  // namespace mbpsim::sockets
