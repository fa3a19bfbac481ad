package io.amtuner.realyarn;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.atomic.AtomicReference;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.SecurityUtil;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.service.AbstractService;
import org.apache.hadoop.service.Service;
import org.apache.hadoop.util.VersionInfo;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.applicationhistoryservice.ApplicationHistoryServer;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;

/**
 * Starts Hadoop's own ResourceManager and NodeManagers in this JVM (MiniYARNCluster), writes their
 * real addresses to a ready file, hosts the AMs of the apps submitted for load, and stops the
 * cluster when stdin says {@code quit} or closes.
 *
 * <p>Every scheduler setting comes from the conf directory first on the classpath, because
 * {@code AdminService.refreshQueues} re-reads yarn-site.xml and the scheduler file from there: a
 * setting made in code would be lost on the first refresh.
 *
 * <p>A secured cluster (Kerberos, SPNEGO on the web endpoint) starts Hadoop's MiniKdc in this JVM
 * first, before anything reads the security settings, when the system property {@code
 * amtuner.kdc.dir} names its directory: {@code amtuner.kdc.keytabs} lists the keytabs to write
 * ({@code FILE=PRINCIPAL,PRINCIPAL;FILE=...}) and {@code amtuner.kdc.ticket-lifetime} caps every
 * ticket it issues, so that renewal happens within a test. Its port and realm go in the ready file.
 *
 * <p>Usage: {@code Launcher NODES READY_FILE MARKER_DIR AM_HEARTBEAT_MS}. Exit code 0 after
 * {@code quit}, 1 when the cluster could not start (the reason is on stderr).
 */
public final class Launcher {
  private Launcher() {}

  public static void main(String[] args) {
    try {
      run(Integer.parseInt(args[0]), Path.of(args[1]), Path.of(args[2]), Long.parseLong(args[3]));
    } catch (Throwable e) {
      e.printStackTrace();
      // Non-daemon threads of a half-started cluster would otherwise keep the JVM alive.
      System.exit(1);
    }
  }

  private static void run(int nodes, Path ready, Path markers, long amHeartbeatMs) throws Exception {
    MiniKdc kdc = startKdc();
    AtomicReference<Object> rmPipeline = new AtomicReference<>();
    AbstractService.registerGlobalListener(
        service -> {
          if (service instanceof ResourceManager && service.isInState(Service.STATE.STARTED)) {
            rmPipeline.set(guicePipeline(null));
          }
        });
    YarnConfiguration conf = new YarnConfiguration();
    if (kdc != null) {
      // MiniYARNCluster's RM and NMs skip their own keytab login (doSecureLogin is a no-op in
      // it), so the JVM logs in once as the RM's principal and every daemon in it serves as that.
      UserGroupInformation.setConfiguration(conf);
      SecurityUtil.login(
          conf, YarnConfiguration.RM_KEYTAB, YarnConfiguration.RM_PRINCIPAL, "localhost");
    }
    MiniYARNCluster cluster = new MiniYARNCluster("amtuner", 1, nodes, 1, 1);
    cluster.init(conf);
    cluster.start();
    if (!cluster.waitForNodeManagersToConnect(60_000)) {
      throw new IllegalStateException(nodes + " NodeManagers did not register within 60 s");
    }
    String timeline = "";
    ApplicationHistoryServer started = cluster.getApplicationHistoryServer();
    if (started != null) {
      timeline = "\"timeline\": \"" + timelineServer(cluster, started) + "\", ";
    }
    // Guice keeps one servlet pipeline per JVM: each NodeManager's web app replaced the RM's, so
    // the RM's pages (/cluster, /cluster/scheduler) answered 404 (so did a timeline server's). Put
    // the RM's back; no test reads the other pages (the timeline server's REST API is not Guice's).
    guicePipeline(rmPipeline.get());

    ResourceManager rm = cluster.getResourceManager();
    Configuration rmConf = rm.getConfig();
    AmHost host = new AmHost(rm, new YarnConfiguration(rmConf), markers, amHeartbeatMs);
    Thread hostThread = new Thread(host, "amtuner-am-host");
    hostThread.setDaemon(true);
    hostThread.start();

    String json =
        "{\"webapp\": \"" + WebAppUtils.getRMWebAppURLWithoutScheme(rmConf) + "\", "
            + timeline
            + "\"scheme\": \"" + WebAppUtils.getHttpSchemePrefix(rmConf) + "\", "
            + (kdc == null ? "" : "\"kdc_port\": " + kdc.getPort() + ", \"realm\": \""
                + kdc.getRealm() + "\", ")
            + "\"admin\": \"" + rmConf.get(YarnConfiguration.RM_ADMIN_ADDRESS) + "\", "
            + "\"rm\": \"" + rmConf.get(YarnConfiguration.RM_ADDRESS) + "\", "
            + "\"scheduler\": \"" + rmConf.get(YarnConfiguration.RM_SCHEDULER_ADDRESS) + "\", "
            + "\"hadoop_version\": \"" + VersionInfo.getVersion() + "\", "
            + "\"nodes\": " + nodes + ", "
            + "\"pid\": " + ProcessHandle.current().pid() + "}\n";
    Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
    Files.writeString(tmp, json);
    Files.move(tmp, ready, StandardCopyOption.ATOMIC_MOVE);

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null && !line.strip().equals("quit")) {
      // Only "quit" (or the end of stdin) means anything.
    }
    host.stop();
    // No graceful MiniYARNCluster.stop(): each NodeManager waits about 17 s for apps and RPC
    // servers, and nothing here outlives the JVM but the containers, which the caller reaps.
    Runtime.getRuntime().halt(0);
  }

  /**
   * With yarn.timeline-service.enabled MiniYARNCluster starts an ApplicationHistoryServer on a web
   * port of its choosing (9188 when free), the one the RM publishes to, but on the deprecated
   * in-memory ApplicationHistoryStore, which nothing fills (the RM publishes to the timeline
   * store). Replaces it, on the same addresses, by one that serves the generic history from its
   * timeline store ({@code ApplicationHistoryManagerOnTimelineStore}: no history store set), as a
   * real timeline server does; returns its web address. No app has run yet, so nothing is lost.
   */
  private static String timelineServer(MiniYARNCluster cluster, ApplicationHistoryServer started) {
    Configuration conf = new YarnConfiguration(cluster.getConfig());
    String address = conf.get(YarnConfiguration.TIMELINE_SERVICE_WEBAPP_ADDRESS);
    started.stop();
    conf.unset(YarnConfiguration.APPLICATION_HISTORY_STORE);
    ApplicationHistoryServer server = new ApplicationHistoryServer();
    server.init(conf);
    server.start();
    return address;
  }

  /** The secured cluster's KDC with its keytabs written, or null for simple authentication. */
  private static MiniKdc startKdc() throws Exception {
    String dir = System.getProperty("amtuner.kdc.dir");
    if (dir == null) {
      return null;
    }
    Properties conf = MiniKdc.createConf();
    conf.setProperty(MiniKdc.KDC_BIND_ADDRESS, "127.0.0.1");
    String lifetime = System.getProperty("amtuner.kdc.ticket-lifetime");
    if (lifetime != null) {
      conf.setProperty(MiniKdc.MAX_TICKET_LIFETIME, lifetime);
      conf.setProperty(MiniKdc.MAX_RENEWABLE_LIFETIME, lifetime);
    }
    MiniKdc kdc = new MiniKdc(conf, new File(dir));
    kdc.start();
    for (String keytab : System.getProperty("amtuner.kdc.keytabs", "").split(";")) {
      if (!keytab.isBlank()) {
        String[] fileAndPrincipals = keytab.split("=", 2);
        kdc.createPrincipal(new File(fileAndPrincipals[0]), fileAndPrincipals[1].split(","));
      }
    }
    return kdc;
  }

  /** Reads (value null) or sets Guice's JVM-wide GuiceFilter pipeline. */
  private static Object guicePipeline(Object value) {
    try {
      Class<?> filter =
          Class.forName("org.apache.hadoop.shaded.com.google.inject.servlet.GuiceFilter");
      Field field = filter.getDeclaredField("pipeline");
      field.setAccessible(true);
      if (value != null) {
        field.set(null, value);
      }
      return field.get(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot reach Guice's servlet pipeline", e);
    }
  }
}
